// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pyembed - a native program that loads the Python interpreter late, as an
 * application embedding Python through a plugin does: native_spin() for
 * NATIVE seconds of CPU, then dlopen("libpython3.11.so.1.0"), Py_Initialize()
 * and the Python file FILE run with sys.argv = [FILE, ARGS...].
 *
 *     main -> native_spin                        (the first NATIVE s)
 *     main -> run_python -> PyRun_SimpleString  (FILE's frames)
 *
 * The process was not a Python one when it was first seen: its interpreter
 * is a mapping that came later. Usage: pyembed NATIVE FILE [ARGS...]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void native_spin(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		for (unsigned long i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) int run_python(int argc, char **argv)
{
	void *lib = dlopen("libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL);
	void (*init)(void);
	int (*run)(const char *);
	char code[8192];
	size_t n;

	if (!lib) {
		fprintf(stderr, "pyembed: %s\n", dlerror());
		return 1;
	}
	init = (void (*)(void))dlsym(lib, "Py_Initialize");
	run = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
	if (!init || !run) {
		fprintf(stderr, "pyembed: %s\n", dlerror());
		return 1;
	}
	init();
	/* sys.argv as a list of repr()'d strings: arguments are test paths and numbers. */
	n = (size_t)snprintf(code, sizeof(code), "import sys\nsys.argv = [");
	for (int i = 0; i < argc && n < sizeof(code) - 256; i++)
		n += (size_t)snprintf(code + n, sizeof(code) - n, "%s'%s'", i ? ", " : "", argv[i]);
	snprintf(code + n, sizeof(code) - n,
		 "]\nexec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'))\n");
	return run(code) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: pyembed NATIVE_SECONDS FILE [ARGS...]\n");
		return 2;
	}
	native_spin(atof(argv[1]));
	return run_python(argc - 2, argv + 2);
}

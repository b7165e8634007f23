// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * anntpl - the C++ template twin of annloop for the annotate tests: the
 * hot function is a template method,
 *
 *     main -> ann::Divider<unsigned long>::run(unsigned long)
 *
 * a chain of dependent divisions, so one instruction holds most samples.
 * Its DWARF is in anntpl.debug beside it (.gnu_debuglink). Usage: anntpl SECONDS
 */
#include <cstdlib>
#include <ctime>

namespace ann {
template <typename T> class Divider {
public:
	explicit Divider(T d) : d_(d) {}

	__attribute__((noinline)) T run(unsigned long n)
	{
		T x = static_cast<T>(0x7edcba9876543210ul);

	#pragma clang loop unroll(disable)
	for (unsigned long i = 0; i < n; i++)
			x = x / d_ + static_cast<T>(i * 977);
		return x;
	}

private:
	T d_;
};
} // namespace ann

/* Not a constant (a real div), and wider than 32 bits, so the compiler's
 * 32-bit fast path for small operands is never taken. */
static volatile unsigned long divisor = 0x100000007ul;
static volatile unsigned long sink;

static double now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? std::atof(argv[1]) : 5);
	ann::Divider<unsigned long> div(divisor);

	while (now() < until)
		sink = div.run(200000);
	return 0;
}

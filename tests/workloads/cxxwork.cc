// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * cxxwork - C++ workload for the demangling test: the hot function is a
 * template method in a namespace,
 *
 *     main -> wl::Accumulator<double>::spin(unsigned long)
 *
 * whose mangled name is _ZN2wl11AccumulatorIdE4spinEm. Usage: cxxwork SECONDS
 */
#include <cstdlib>
#include <ctime>

namespace wl {
template <typename T> class Accumulator {
public:
	__attribute__((noinline)) T spin(unsigned long n)
	{
		for (unsigned long i = 0; i < n; i++)
			total_ = total_ + static_cast<T>(i) * static_cast<T>(0.5);
		return total_;
	}

private:
	volatile T total_ = 0;
};
} // namespace wl

static double now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? std::atof(argv[1]) : 5);
	wl::Accumulator<double> acc;

	while (now() < until)
		acc.spin(1000000);
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * JavaHot - a CPU-bound Java program for bpfprof's HotSpot names (issue 42,
 * tests/integration/test_jvm.py): its main thread calls alpha() and beta()
 * in turn, the same loop, alpha twice the iterations of beta (2:1 of the
 * thread's CPU). Each call takes milliseconds, so the driver loop in main
 * runs seldom: it stays interpreted (or is compiled late), and the JIT does
 * not inline alpha and beta into it. Prints "warm" after 300 rounds (both
 * compiled by then). Usage: java JavaHot SECONDS
 */
public class JavaHot {
	static volatile long sink;

	static long alpha(long x) {
		for (int i = 0; i < 4_000_000; i++)
			x = x * 6364136223846793005L + (x >>> 17) + i;
		return x;
	}

	static long beta(long x) {
		for (int i = 0; i < 2_000_000; i++)
			x = x * 6364136223846793005L + (x >>> 17) + i;
		return x;
	}

	public static void main(String[] args) {
		long stop = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		long x = 1;
		int rounds = 0;

		while (System.nanoTime() < stop) {
			x = alpha(x);
			x = beta(x);
			if (++rounds == 300)
				System.out.println("warm");
		}
		sink = x;
	}
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * JavaInline - inlined Java methods for bpfprof's HotSpot names (issue 42,
 * tests/integration/test_jvm.py): main calls outer(), outer calls the small
 * helper() (which C2 inlines into it), helper calls big() (too large to be
 * inlined: over FreqInlineSize's 325 bytes of bytecode), where the time
 * goes. Run with -XX:+PreserveFramePointer, a stack of big reads
 * big <- helper (inlined: a frame of its own) <- outer. Prints "warm" after
 * 300 calls of outer. Usage: java JavaInline SECONDS
 */
public class JavaInline {
	static volatile long sink;

	static long big(long x) {
		x = x * 6364136223846793005L + (x >>> 3) + 0;
		x = x * 6364136223846793007L + (x >>> 4) + 1;
		x = x * 6364136223846793009L + (x >>> 5) + 2;
		x = x * 6364136223846793011L + (x >>> 6) + 3;
		x = x * 6364136223846793013L + (x >>> 7) + 4;
		x = x * 6364136223846793015L + (x >>> 8) + 5;
		x = x * 6364136223846793017L + (x >>> 9) + 6;
		x = x * 6364136223846793019L + (x >>> 10) + 7;
		x = x * 6364136223846793021L + (x >>> 11) + 8;
		x = x * 6364136223846793023L + (x >>> 12) + 9;
		x = x * 6364136223846793025L + (x >>> 13) + 10;
		x = x * 6364136223846793027L + (x >>> 14) + 11;
		x = x * 6364136223846793029L + (x >>> 15) + 12;
		x = x * 6364136223846793031L + (x >>> 16) + 13;
		x = x * 6364136223846793033L + (x >>> 17) + 14;
		x = x * 6364136223846793035L + (x >>> 18) + 15;
		x = x * 6364136223846793037L + (x >>> 19) + 16;
		x = x * 6364136223846793039L + (x >>> 20) + 17;
		x = x * 6364136223846793041L + (x >>> 21) + 18;
		x = x * 6364136223846793043L + (x >>> 22) + 19;
		x = x * 6364136223846793045L + (x >>> 23) + 20;
		x = x * 6364136223846793047L + (x >>> 24) + 21;
		x = x * 6364136223846793049L + (x >>> 25) + 22;
		x = x * 6364136223846793051L + (x >>> 26) + 23;
		x = x * 6364136223846793053L + (x >>> 27) + 24;
		x = x * 6364136223846793055L + (x >>> 28) + 25;
		x = x * 6364136223846793057L + (x >>> 29) + 26;
		x = x * 6364136223846793059L + (x >>> 30) + 27;
		x = x * 6364136223846793061L + (x >>> 31) + 28;
		x = x * 6364136223846793063L + (x >>> 3) + 29;
		x = x * 6364136223846793065L + (x >>> 4) + 30;
		x = x * 6364136223846793067L + (x >>> 5) + 31;
		x = x * 6364136223846793069L + (x >>> 6) + 32;
		x = x * 6364136223846793071L + (x >>> 7) + 33;
		x = x * 6364136223846793073L + (x >>> 8) + 34;
		x = x * 6364136223846793075L + (x >>> 9) + 35;
		x = x * 6364136223846793077L + (x >>> 10) + 36;
		x = x * 6364136223846793079L + (x >>> 11) + 37;
		x = x * 6364136223846793081L + (x >>> 12) + 38;
		x = x * 6364136223846793083L + (x >>> 13) + 39;
		x = x * 6364136223846793085L + (x >>> 14) + 40;
		x = x * 6364136223846793087L + (x >>> 15) + 41;
		x = x * 6364136223846793089L + (x >>> 16) + 42;
		x = x * 6364136223846793091L + (x >>> 17) + 43;
		x = x * 6364136223846793093L + (x >>> 18) + 44;
		x = x * 6364136223846793095L + (x >>> 19) + 45;
		x = x * 6364136223846793097L + (x >>> 20) + 46;
		x = x * 6364136223846793099L + (x >>> 21) + 47;
		x = x * 6364136223846793101L + (x >>> 22) + 48;
		x = x * 6364136223846793103L + (x >>> 23) + 49;
		x = x * 6364136223846793105L + (x >>> 24) + 50;
		x = x * 6364136223846793107L + (x >>> 25) + 51;
		x = x * 6364136223846793109L + (x >>> 26) + 52;
		x = x * 6364136223846793111L + (x >>> 27) + 53;
		x = x * 6364136223846793113L + (x >>> 28) + 54;
		x = x * 6364136223846793115L + (x >>> 29) + 55;
		x = x * 6364136223846793117L + (x >>> 30) + 56;
		x = x * 6364136223846793119L + (x >>> 31) + 57;
		x = x * 6364136223846793121L + (x >>> 3) + 58;
		x = x * 6364136223846793123L + (x >>> 4) + 59;
		return x;
	}

	static long helper(long x) {
		return big(x ^ 0x5555) + 1;
	}

	static long outer(long x) {
		for (int i = 0; i < 100_000; i++)
			x = helper(x);
		return x;
	}

	public static void main(String[] args) {
		long stop = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		long x = 1;
		int rounds = 0;

		while (System.nanoTime() < stop) {
			x = outer(x);
			if (++rounds == 300)
				System.out.println("warm");
		}
		sink = x;
	}
}

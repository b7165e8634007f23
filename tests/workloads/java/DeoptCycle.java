// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * DeoptCycle - one cycle of JavaDeopt (issue 42, tests/integration/test_jvm4.py),
 * loaded afresh by a class loader of its own each cycle, so every cycle
 * compiles, deoptimises and recompiles its code anew:
 *
 *   phase A, thread "deoptA": drive() calls mid(), mid calls via() (small:
 *   inlined into mid), via calls s.work() on an Alpha (too big to inline).
 *   While Alpha is the only Shape loaded, the JIT binds s.work() to
 *   Alpha.work (class hierarchy analysis, a dependency). The main thread
 *   then makes the next call a long one (hold), and while mid's compiled
 *   frame (or drive's, mid inlined) waits for it, loads Beta: the dependency
 *   breaks and that frame is deoptimised on the stack (its return address
 *   patched to its nmethod's deopt handler) until Alpha.work returns;
 *   phase B, thread "deoptB": the same on a Beta: drive's code, compiled for
 *   Alpha, traps on the new type and is compiled again.
 *
 * Known methods: thread deoptA runs Alpha.work (never Beta.work), deoptB
 * Beta.work (never Alpha.work), each under via, mid and drive.
 */
public class DeoptCycle implements Runnable {
	static volatile long hold = 2000;  /* work()'s time, ns (a few rounds; the long call: 1 s) */
	static volatile boolean stop;
	static volatile long sink;

	static abstract class Shape {
		abstract long work(long x, long until);
	}

	static final class Alpha extends Shape {
		long work(long x, long until) {
			do {
				for (int i = 0; i < 8; i++) {
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
				}
			} while (System.nanoTime() < until);
			return x;
		}
	}

	static final class Beta extends Shape {
		long work(long x, long until) {
			do {
				for (int i = 0; i < 8; i++) {
					x = x * 6364136223846793006L + (x >>> 3) + 0;
					x = x * 6364136223846793008L + (x >>> 4) + 1;
					x = x * 6364136223846793010L + (x >>> 5) + 2;
					x = x * 6364136223846793012L + (x >>> 6) + 3;
					x = x * 6364136223846793014L + (x >>> 7) + 4;
					x = x * 6364136223846793016L + (x >>> 8) + 5;
					x = x * 6364136223846793018L + (x >>> 9) + 6;
					x = x * 6364136223846793020L + (x >>> 10) + 7;
					x = x * 6364136223846793022L + (x >>> 11) + 8;
					x = x * 6364136223846793024L + (x >>> 12) + 9;
					x = x * 6364136223846793026L + (x >>> 13) + 10;
					x = x * 6364136223846793028L + (x >>> 14) + 11;
					x = x * 6364136223846793030L + (x >>> 15) + 12;
					x = x * 6364136223846793032L + (x >>> 16) + 13;
					x = x * 6364136223846793034L + (x >>> 17) + 14;
					x = x * 6364136223846793036L + (x >>> 18) + 15;
					x = x * 6364136223846793038L + (x >>> 19) + 16;
					x = x * 6364136223846793040L + (x >>> 20) + 17;
					x = x * 6364136223846793042L + (x >>> 21) + 18;
					x = x * 6364136223846793044L + (x >>> 22) + 19;
					x = x * 6364136223846793046L + (x >>> 23) + 20;
					x = x * 6364136223846793048L + (x >>> 24) + 21;
					x = x * 6364136223846793050L + (x >>> 25) + 22;
					x = x * 6364136223846793052L + (x >>> 26) + 23;
					x = x * 6364136223846793054L + (x >>> 27) + 24;
					x = x * 6364136223846793056L + (x >>> 28) + 25;
					x = x * 6364136223846793058L + (x >>> 29) + 26;
					x = x * 6364136223846793060L + (x >>> 30) + 27;
					x = x * 6364136223846793062L + (x >>> 31) + 28;
					x = x * 6364136223846793064L + (x >>> 3) + 29;
					x = x * 6364136223846793066L + (x >>> 4) + 30;
					x = x * 6364136223846793068L + (x >>> 5) + 31;
					x = x * 6364136223846793070L + (x >>> 6) + 32;
					x = x * 6364136223846793072L + (x >>> 7) + 33;
					x = x * 6364136223846793074L + (x >>> 8) + 34;
					x = x * 6364136223846793076L + (x >>> 9) + 35;
					x = x * 6364136223846793078L + (x >>> 10) + 36;
					x = x * 6364136223846793080L + (x >>> 11) + 37;
					x = x * 6364136223846793082L + (x >>> 12) + 38;
					x = x * 6364136223846793084L + (x >>> 13) + 39;
					x = x * 6364136223846793086L + (x >>> 14) + 40;
					x = x * 6364136223846793088L + (x >>> 15) + 41;
					x = x * 6364136223846793090L + (x >>> 16) + 42;
					x = x * 6364136223846793092L + (x >>> 17) + 43;
					x = x * 6364136223846793094L + (x >>> 18) + 44;
					x = x * 6364136223846793096L + (x >>> 19) + 45;
					x = x * 6364136223846793098L + (x >>> 20) + 46;
					x = x * 6364136223846793100L + (x >>> 21) + 47;
				}
			} while (System.nanoTime() < until);
			return x;
		}
	}

	static long via(Shape s, long x) {
		return s.work(x ^ 0x5555, System.nanoTime() + hold);
	}

	static long mid(Shape s, long x) {
		return via(s, x) + 1;
	}

	static long drive(Shape s, long x) {
		while (!stop)
			x = mid(s, x);
		return x;
	}

	/* Classes by name: a Beta in this file's code would be loaded with it (by the verifier). */
	static Shape make(String cls) throws Exception {
		return (Shape)Class.forName(cls, true, DeoptCycle.class.getClassLoader())
			.getDeclaredConstructor().newInstance();
	}

	static void phase(String name, String cls, long warm_ms, long hold_ms, String load)
			throws Exception {
		Shape s = make(cls);

		stop = false;
		Thread t = new Thread(() -> sink = drive(s, 1), name);
		t.start();
		Thread.sleep(warm_ms);  /* mid compiled (drive too, later: OSR) */
		hold = hold_ms * 1_000_000L;
		Thread.sleep(hold_ms / 4);  /* in the long call of work() */
		hold = 2000;
		if (load != null)  /* mid's (or drive's) compiled frame deoptimised */
			make(load);
		Thread.sleep(hold_ms);  /* the long call returns; compiled again */
		stop = true;
		t.join();
	}

	public void run() {
		try {
			phase("deoptA", "DeoptCycle$Alpha", 500, 1000, "DeoptCycle$Beta");
			phase("deoptB", "DeoptCycle$Beta", 500, 1000, null);
		} catch (Exception e) {
			throw new RuntimeException(e);
		}
	}
}

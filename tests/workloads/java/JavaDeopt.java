// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * JavaDeopt - Java code deoptimised and recompiled while it is profiled
 * (issue 42, tests/integration/test_jvm4.py): cycle after cycle, a fresh
 * class loader loads DeoptCycle (from this class's own directory; the
 * platform loader as parent, so the classes are new each time) and runs it
 * (its two phases: see DeoptCycle.java). Prints "warm" after the first
 * cycle. Usage: java JavaDeopt SECONDS
 */
import java.net.URL;
import java.net.URLClassLoader;

public class JavaDeopt {
	public static void main(String[] args) throws Exception {
		long stop = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		URL[] path = { JavaDeopt.class.getProtectionDomain().getCodeSource().getLocation() };
		int rounds = 0;

		while (System.nanoTime() < stop) {
			try (URLClassLoader l = new URLClassLoader(path, ClassLoader.getPlatformClassLoader())) {
				((Runnable)l.loadClass("DeoptCycle").getDeclaredConstructor().newInstance()).run();
			}
			if (++rounds == 1)
				System.out.println("warm");
		}
	}
}

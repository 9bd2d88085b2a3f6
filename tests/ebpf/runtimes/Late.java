// A JVM that compiles new code just before it exits: Late.first is hot for
// the milliseconds given, then Late.second for a second, then the JVM exits
// (tests/integration/ebpf_java.sh: the perf map the daemon asked for is
// rewritten late, and must still be removed after the exit).
public class Late {
	static long first(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += i * 31 ^ (s >>> 3);
		return s;
	}

	static long second(long n) {
		long s = 1;
		for (long i = 0; i < n; i++)
			s += i * 17 ^ (s >>> 5);
		return s;
	}

	public static void main(String[] args) {
		long end = System.currentTimeMillis() + Long.parseLong(args[0]);
		long t = 0;
		while (System.currentTimeMillis() < end)
			t += first(1000000);
		end = System.currentTimeMillis() + 1000;
		while (System.currentTimeMillis() < end)
			t += second(1000000);
		System.out.println(t == 42 ? "" : "done");
	}
}

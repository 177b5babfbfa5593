// SPDX-License-Identifier: GPL-2.0-only
package mysqltrace.agent;

/**
 * The calls that the instrumented JDK methods make (see Agent). Loaded by
 * the bootstrap class loader (mysqltrace-probes.jar is on its search path),
 * so that the JDK's own classes can reach it. The native methods are in
 * libmysqltrace-java.so, whose USDT probes ("mysqltrace:java_tls_enter",
 * "mysqltrace:java_tls_exit") bpf/client.bpf.c reads; with no tracer
 * attached a call returns after reading one semaphore.
 */
public final class Probes {
    /** An application read (enum mt_sock_op's MT_SOCK_TLS_RECV). */
    public static final int READ = 6;
    /** An application write (MT_SOCK_TLS_SEND). */
    public static final int WRITE = 7;

    private static volatile boolean loaded;

    private Probes() {}

    /** Loads the native library; called once by the agent. */
    public static synchronized void load(String path) {
        if (!loaded) {
            System.load(path);
            loaded = true;
        }
    }

    /** A read or write of the TLS socket `socket` begins on this thread. */
    public static void enter(int op, Object socket) {
        if (loaded) {
            enter0(op, System.identityHashCode(socket));
        }
    }

    /**
     * It ended: `n` bytes of cleartext at b[off..off+n) were read or
     * written; n < 0 when the call ended by end of stream or an exception.
     */
    public static void exit(int op, Object socket, byte[] b, int off, int n) {
        if (loaded) {
            exit0(op, System.identityHashCode(socket), b, off, n);
        }
    }

    private static native void enter0(int op, int key);

    private static native void exit0(int op, int key, byte[] b, int off, int n);
}

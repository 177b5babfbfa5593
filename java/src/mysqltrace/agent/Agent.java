// SPDX-License-Identifier: GPL-2.0-only
package mysqltrace.agent;

import java.io.File;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * mysqltrace's Java agent: the cleartext of the JDK's TLS sockets for
 * `mysqltrace client`. It rewrites two JDK methods, the application data
 * streams of sun.security.ssl.SSLSocketImpl (as named in JDK 17):
 *
 * <pre>
 *   SSLSocketImpl$AppInputStream.read(byte[] b, int off, int len)
 *   SSLSocketImpl$AppOutputStream.write(byte[] b, int off, int len)
 * </pre>
 *
 * so that each calls Probes.enter(op, socket) first and Probes.exit(op,
 * socket, b, off, n) when it returns (n: read's result, write's len) or
 * throws (n = -1). The socket is the stream's SSLSocketImpl (this$0). The
 * socket syscalls made between the two tell the tracer which socket the
 * session uses, as for OpenSSL.
 *
 * Loaded with -javaagent:mysqltrace-agent.jar at the JVM's start or by
 * `mysqltrace client --pid` through the JDK's attach mechanism. Option
 * "lib=PATH": libmysqltrace-java.so (default: next to the agent's jar, as in
 * the build tree, else the installed one that the jar's manifest names,
 * Mysqltrace-Library).
 * Nothing else in the JVM changes; the agent stays until the JVM exits.
 */
public final class Agent {
    static final String IN = "sun/security/ssl/SSLSocketImpl$AppInputStream";
    static final String OUT = "sun/security/ssl/SSLSocketImpl$AppOutputStream";
    static final String SOCKET = "Lsun/security/ssl/SSLSocketImpl;";
    static final String PROBES = "mysqltrace/agent/Probes";

    private static volatile boolean installed;

    private Agent() {}

    public static void premain(String args, Instrumentation inst) throws Exception {
        install(args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) throws Exception {
        install(args, inst);
    }

    private static synchronized void install(String args, Instrumentation inst) throws Exception {
        if (installed) {
            return;  // loaded twice: the methods are instrumented already
        }
        String lib = null;
        if (args != null) {
            for (String a : args.split(",")) {
                if (a.startsWith("lib=")) {
                    lib = a.substring(4);
                }
            }
        }
        if (lib == null) {
            File jar = new File(Agent.class.getProtectionDomain().getCodeSource().getLocation()
                                    .toURI());
            File next = new File(jar.getParentFile(), "libmysqltrace-java.so");
            if (next.exists()) {
                lib = next.getPath();
            } else {
                try (JarFile j = new JarFile(jar)) {
                    lib = j.getManifest().getMainAttributes().getValue("Mysqltrace-Library");
                }
            }
        }
        try {
            Probes.load(lib);
        } catch (Throwable t) {
            // The application runs on, without the probes.
            System.err.println("mysqltrace agent: cannot load " + lib + ": " + t
                               + "; the JDK's TLS sockets are left as they are");
            return;
        }
        // The JDK's classes live in java.base, which reads no unnamed module
        // by default; Probes is in the bootstrap loader's.
        Module base = Object.class.getModule();
        inst.redefineModule(base, Set.of(Probes.class.getModule()), Map.of(), Map.of(), Set.of(),
                            Map.of());
        inst.addTransformer(new Transformer(), true);
        installed = true;
        List<Class<?>> loaded = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            String n = c.getName().replace('.', '/');
            if (n.equals(IN) || n.equals(OUT)) {
                loaded.add(c);
            }
        }
        if (!loaded.isEmpty()) {
            inst.retransformClasses(loaded.toArray(new Class<?>[0]));
        }
    }

    static final class Transformer implements ClassFileTransformer {
        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined,
                                ProtectionDomain pd, byte[] bytes) {
            if (loader != null || !(IN.equals(name) || OUT.equals(name))) {
                return null;
            }
            try {
                return rewrite(name, bytes);
            } catch (Throwable t) {
                System.err.println("mysqltrace agent: cannot instrument " + name + ": " + t);
                return null;
            }
        }
    }

    static byte[] rewrite(String owner, byte[] bytes) {
        final boolean read = owner.equals(IN);
        ClassReader cr = new ClassReader(bytes);
        // Maximums recomputed; the method's own stack map frames are kept,
        // and the one frame the added handler needs is written here.
        ClassWriter cw = new ClassWriter(cr, ClassWriter.COMPUTE_MAXS);
        final boolean[] found = {false};
        cr.accept(new ClassVisitor(Opcodes.ASM9, cw) {
            @Override
            public MethodVisitor visitMethod(int access, String mname, String desc, String sig,
                                             String[] exc) {
                MethodVisitor mv = super.visitMethod(access, mname, desc, sig, exc);
                if (desc.equals("([BII)" + (read ? "I" : "V"))
                    && mname.equals(read ? "read" : "write")) {
                    found[0] = true;
                    return new Probed(mv, owner, read);
                }
                return mv;
            }
        }, 0);
        if (!found[0]) {
            System.err.println("mysqltrace agent: " + owner + " has no "
                               + (read ? "read(byte[], int, int)" : "write(byte[], int, int)")
                               + " (not the JDK it knows): its TLS cleartext is not seen");
            return null;
        }
        return cw.toByteArray();
    }

    /** The method's body between Probes.enter and Probes.exit. */
    static final class Probed extends MethodVisitor {
        private final String owner;
        private final boolean read;
        private final Label start = new Label();
        private final Label end = new Label();
        private final Label handler = new Label();

        Probed(MethodVisitor mv, String owner, boolean read) {
            super(Opcodes.ASM9, mv);
            this.owner = owner;
            this.read = read;
        }

        private void op() {
            super.visitIntInsn(Opcodes.BIPUSH, read ? 6 : 7);
        }

        private void socket() {
            super.visitVarInsn(Opcodes.ALOAD, 0);
            super.visitFieldInsn(Opcodes.GETFIELD, owner, "this$0", SOCKET);
        }

        @Override
        public void visitCode() {
            super.visitCode();
            op();
            socket();
            super.visitMethodInsn(Opcodes.INVOKESTATIC, PROBES, "enter",
                                  "(ILjava/lang/Object;)V", false);
            super.visitLabel(start);
        }

        // Before each return: exit(op, socket, b, off, n) with n the result
        // (read) or len (write).
        @Override
        public void visitInsn(int opcode) {
            if (opcode == Opcodes.IRETURN || opcode == Opcodes.RETURN) {
                if (read) {
                    super.visitInsn(Opcodes.DUP);       // n
                    super.visitVarInsn(Opcodes.ISTORE, 3);  // len is no longer needed
                }
                op();
                socket();
                super.visitVarInsn(Opcodes.ALOAD, 1);
                super.visitVarInsn(Opcodes.ILOAD, 2);
                super.visitVarInsn(Opcodes.ILOAD, 3);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, PROBES, "exit",
                                      "(ILjava/lang/Object;[BII)V", false);
            }
            super.visitInsn(opcode);
        }

        // A throw: exit(op, socket, null, 0, -1), then rethrow. The handler
        // comes last in the exception table, so the method's own handlers
        // see their exceptions first.
        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            super.visitLabel(end);
            super.visitTryCatchBlock(start, end, handler, null);
            super.visitLabel(handler);
            super.visitFrame(Opcodes.F_FULL, 4,
                             new Object[] {owner, "[B", Opcodes.INTEGER, Opcodes.INTEGER}, 1,
                             new Object[] {"java/lang/Throwable"});
            op();
            socket();
            super.visitInsn(Opcodes.ACONST_NULL);
            super.visitInsn(Opcodes.ICONST_0);
            super.visitInsn(Opcodes.ICONST_M1);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, PROBES, "exit",
                                  "(ILjava/lang/Object;[BII)V", false);
            super.visitInsn(Opcodes.ATHROW);
            super.visitMaxs(maxStack, maxLocals);
        }
    }
}

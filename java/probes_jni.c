// SPDX-License-Identifier: GPL-2.0-only
// libmysqltrace-java.so: the native half of the Java agent
// (src/mysqltrace/agent/Probes.java). Two USDT probes of provider
// "mysqltrace", read by bpf/client.bpf.c (include/mysqltrace/abi/usdt.h):
//
//   java_tls_enter(op, key)             an application read/write of a JDK
//                                       TLS socket begins on this thread
//   java_tls_exit(op, key, buf, ret)    it ended: ret bytes of cleartext at
//                                       buf (ret <= 0: none)
//
// Each has a semaphore: with no tracer attached a call reads it and
// returns. The byte array is pinned (GetPrimitiveArrayCritical) only while
// a tracer is attached, for the time of the probe.
#include <jni.h>
#include <stdint.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#define MT_SEMAPHORE __attribute__((section(".probes"), used, visibility("hidden")))

MT_SEMAPHORE volatile unsigned short mysqltrace_java_tls_enter_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_java_tls_exit_semaphore;

JNIEXPORT void JNICALL Java_mysqltrace_agent_Probes_enter0(JNIEnv *env, jclass cls, jint op,
                                                           jint key) {
    (void)env;
    (void)cls;
    if (__builtin_expect(mysqltrace_java_tls_enter_semaphore != 0, 0)) {
        STAP_PROBE2(mysqltrace, java_tls_enter, (int)op, (uint32_t)key);
    }
}

JNIEXPORT void JNICALL Java_mysqltrace_agent_Probes_exit0(JNIEnv *env, jclass cls, jint op,
                                                          jint key, jbyteArray b, jint off,
                                                          jint n) {
    (void)cls;
    if (__builtin_expect(mysqltrace_java_tls_exit_semaphore == 0, 1)) {
        return;
    }
    if (b == NULL || n <= 0 || off < 0 || (*env)->GetArrayLength(env, b) - off < n) {
        STAP_PROBE4(mysqltrace, java_tls_exit, (int)op, (uint32_t)key, (uint64_t)0,
                    (int64_t)(n < 0 ? n : 0));
        return;
    }
    jbyte *p = (*env)->GetPrimitiveArrayCritical(env, b, NULL);
    if (p == NULL) {
        return;
    }
    STAP_PROBE4(mysqltrace, java_tls_exit, (int)op, (uint32_t)key, (uint64_t)(uintptr_t)(p + off),
                (int64_t)n);
    (*env)->ReleasePrimitiveArrayCritical(env, b, p, JNI_ABORT);
}

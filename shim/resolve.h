// SPDX-License-Identifier: GPL-2.0-only
// Finding the real functions behind the shim's interposers, and helper
// functions of the libraries they live in.
#pragma once

#include <stdatomic.h>
#include <stddef.h>

// An interposer: the only kind of symbol the shim exports (exports.map
// lists them; everything else is hidden by -fvisibility=hidden).
#define MT_EXPORT __attribute__((visibility("default")))

// Marks a helper that was looked up and is not there, so it is not looked up
// again on every call.
#define MT_SYM_MISSING ((void *)1)

// The definition of `name` that the shim's own one hides. RTLD_NEXT first;
// when that fails (the library was dlopen'ed RTLD_LOCAL, as Python extension
// modules are, so it is outside the global scope RTLD_NEXT searches, yet its
// callers still bind to the shim), every loaded object but the shim. NULL when
// there is none. Keeps errno; may take the loader's lock.
void *mt_find_next(const char *name);

// `name` in the object that defines `beside` (a real function found by
// mt_find_next) or its dependencies; NULL when it has none. Keeps errno.
void *mt_find_beside(const void *beside, const char *name);

// Whether `addr` lies in the shim itself.
int mt_in_shim(const void *addr);

// The cached real function of an interposer: one load once resolved.
static inline void *mt_real(void *_Atomic *slot, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (__builtin_expect(p != NULL, 1)) {
        return p;
    }
    p = mt_find_next(name);
    if (p != NULL) {
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}

// The real function of interposer `name` (its slot is real_##name) if already
// found, else NULL. No call: an interposer's fast path needs no stack frame.
#define MT_REAL_IF_RESOLVED(name) \
    ((__typeof__(&name))atomic_load_explicit(&real_##name, memory_order_acquire))

// `name` beside `real`, else in the global scope but outside the shim.
void *mt_find_helper(const void *real, const char *name);

// A helper function cached in `slot`, looked up once; NULL when the library
// does not have it.
static inline void *mt_helper(void *_Atomic *slot, const void *real, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (__builtin_expect(p == NULL, 0)) {
        p = mt_find_helper(real, name);
        atomic_store_explicit(slot, p != NULL ? p : MT_SYM_MISSING, memory_order_release);
    }
    return p == MT_SYM_MISSING ? NULL : p;
}

// Resolves `name` into `slot` with RTLD_NEXT only; for constructors, where a
// library that is not loaded yet must stay unresolved rather than be searched for.
void mt_preresolve(void *_Atomic *slot, const char *name);

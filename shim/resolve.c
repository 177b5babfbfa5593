// SPDX-License-Identifier: GPL-2.0-only
// Symbol lookup for the interposers (see resolve.h).
#define _GNU_SOURCE
#include "resolve.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>

// Objects looked at when RTLD_NEXT fails; a process with more is unusual.
#define MT_MAX_OBJECTS 256

static void *_Atomic shim_base;

static void *own_base(void) {
    void *b = atomic_load_explicit(&shim_base, memory_order_acquire);
    if (b == NULL) {
        Dl_info info;
        if (dladdr((const void *)&own_base, &info) != 0) {
            b = info.dli_fbase;
            atomic_store_explicit(&shim_base, b, memory_order_release);
        }
    }
    return b;
}

int mt_in_shim(const void *addr) {
    Dl_info info;
    return addr != NULL && dladdr(addr, &info) != 0 && info.dli_fbase == own_base();
}

struct object_list {
    const char *names[MT_MAX_OBJECTS];
    int count;
    uintptr_t skip;
};

static int collect_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct object_list *list = data;
    // The main program (empty name) is skipped: a handle to it searches the
    // global scope, where the shim comes first.
    if (info->dlpi_name == NULL || info->dlpi_name[0] == 0 || info->dlpi_addr == list->skip) {
        return 0;
    }
    if (list->count < MT_MAX_OBJECTS) {
        list->names[list->count++] = info->dlpi_name;
    }
    return 0;
}

// dl_iterate_phdr() holds a loader lock that dlopen() takes too (in the other
// order when it loads), so names are collected first and opened afterwards.
static void *scan_objects(const char *name) {
    struct object_list list = {.count = 0, .skip = (uintptr_t)own_base()};
    dl_iterate_phdr(collect_object, &list);
    for (int i = 0; i < list.count; i++) {
        void *h = dlopen(list.names[i], RTLD_NOLOAD | RTLD_LAZY);
        if (h == NULL) {
            continue;
        }
        void *p = dlsym(h, name);
        dlclose(h);
        if (p != NULL && !mt_in_shim(p)) {
            return p;
        }
    }
    return NULL;
}

void *mt_find_next(const char *name) {
    int saved = errno;
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        p = scan_objects(name);
    }
    errno = saved;
    return p;
}

void *mt_find_beside(const void *beside, const char *name) {
    int saved = errno;
    void *p = NULL;
    Dl_info info;
    if (beside != NULL && dladdr(beside, &info) != 0 && info.dli_fname != NULL &&
        info.dli_fname[0] != 0) {
        void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
        if (h != NULL) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    if (p != NULL && mt_in_shim(p)) {
        p = NULL;
    }
    errno = saved;
    return p;
}

void *mt_find_helper(const void *real, const char *name) {
    void *p = mt_find_beside(real, name);
    if (p == NULL) {
        int saved = errno;
        p = dlsym(RTLD_DEFAULT, name);
        if (p != NULL && mt_in_shim(p)) {
            p = NULL;
        }
        errno = saved;
    }
    return p;
}

void mt_preresolve(void *_Atomic *slot, const char *name) {
    int saved = errno;
    void *p = dlsym(RTLD_NEXT, name);
    if (p != NULL) {
        atomic_store_explicit(slot, p, memory_order_release);
    }
    errno = saved;
}

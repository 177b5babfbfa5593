// SPDX-License-Identifier: GPL-2.0-only
// Fixed-width types for structs shared by BPF programs, the shim and the C++
// side. BPF code gets them from vmlinux.h; everything else from the kernel UAPI.
#pragma once

#if !defined(__VMLINUX_H__)
#include <linux/types.h>
#endif

// SPDX-License-Identifier: GPL-2.0-only
// Names for code addresses of a running process: the function symbol of a
// mapped file that contains the address, for the caller of each traced
// call (its return address).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
#include <sys/types.h>

#include "proc/maps.h"

namespace mysqltrace::calls {

struct CodeLocation {
    std::string function;  // demangled name without parameters; empty when unknown
    // "function+0x1a" when the function is known, else "file+0xoffset" (file
    // offset in the mapped file's base name), else the raw address.
    std::string site;
    // The address is in the kernel's uprobe trampoline page: the return
    // address was already replaced by a return probe (a tail call).
    bool trampoline = false;
};

class AddressResolver {
  public:
    explicit AddressResolver(pid_t pid);
    ~AddressResolver();
    AddressResolver(const AddressResolver &) = delete;
    AddressResolver &operator=(const AddressResolver &) = delete;

    const CodeLocation &resolve(uint64_t addr);
    bool is_trampoline(uint64_t addr) { return resolve(addr).trampoline; }

  private:
    struct Func {
        uint64_t offset, size;  // file offset range
        std::string name;
    };
    struct FileSyms {
        bool loaded = false;
        std::vector<Func> funcs;  // by offset
    };
    const proc::Mapping *mapping_of(uint64_t addr);
    FileSyms &symbols_of(const proc::Mapping &m);

    pid_t pid_;
    std::vector<proc::Mapping> maps_;
    uint64_t maps_read_ns_ = 0;
    std::map<std::string, FileSyms> files_;
    std::unordered_map<uint64_t, CodeLocation> cache_;
};

}  // namespace mysqltrace::calls

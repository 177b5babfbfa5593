// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target for what mysqltrace learns from a server binary: the ELF
// reader, the symbol tables, the THD layout learner and the stage-site scan,
// on mutated copies of real server binaries. A binary is input too: the host
// agent analyses the binaries of processes that container users control, as
// root. Nothing here may crash, hang or allocate without bound.
//
// The binaries are the seeds: MYSQLTRACE_FUZZ_BINARIES (colon-separated),
// by default Debian's mariadbd and the MySQL 9.7 chroot's mysqld where they
// exist. An input is a list of byte patches aimed at the parts the analysis
// reads (ELF and program headers, section headers, symbol and string tables,
// the code of the functions the layout is learnt from), plus an optional
// truncation: each run maps the binary copy-on-write, patches it, analyses it
// and unmaps it, so a 75 MB binary costs no copy.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "server/hooks.h"
#include "server/server_target.h"
#include "server/stage_sites.h"
#include "server/thd_layout.h"

namespace {

using namespace mysqltrace;

struct Range {
    uint64_t offset, length;
};

struct Target {
    std::string path;
    int fd = -1;
    size_t size = 0;
    std::vector<Range> hot;  // where patches land
    uint64_t hot_bytes = 0;
};

std::vector<Target> targets;

// The names of the functions whose code the analysis reads.
bool analysed(const std::string &n) {
    for (const char *part :
         {"thd_", "THD", "dispatch_", "mysql_parse", "stage", "log_slow", "Diagnostics_area",
          "Security_context", "handler", "TABLE_SHARE", "table_share", "enter_cond", "exit_cond"}) {
        if (n.find(part) != std::string::npos) {
            return true;
        }
    }
    return false;
}

void add_target(const std::string &path) {
    Target t;
    t.path = path;
    t.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (t.fd < 0 || fstat(t.fd, &st) != 0 || st.st_size <= 0) {
        std::fprintf(stderr, "binary_fuzz: cannot read %s, skipped\n", path.c_str());
        return;
    }
    t.size = static_cast<size_t>(st.st_size);
    t.hot.push_back({0, 4096});  // ELF and program headers
    if (Elf *e = elf_begin(t.fd, ELF_C_READ_MMAP, nullptr)) {
        GElf_Ehdr eh;
        if (gelf_getehdr(e, &eh) != nullptr) {
            t.hot.push_back({eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize});
        }
        Elf_Scn *scn = nullptr;
        while ((scn = elf_nextscn(e, scn)) != nullptr) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) != nullptr &&
                (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB ||
                 sh.sh_type == SHT_STRTAB)) {
                t.hot.push_back({sh.sh_offset, sh.sh_size});
            }
        }
        elf_end(e);
    }
    if (auto f = elf::ElfFile::open(path)) {
        for (const auto &s : (*f)->symbols()) {
            if (s.size > 0 && s.size < 65536 && analysed(s.name)) {
                if (auto off = (*f)->vaddr_to_offset(s.vaddr)) {
                    t.hot.push_back({*off, s.size});
                }
            }
        }
    }
    for (auto &r : t.hot) {
        r.length = std::min<uint64_t>(r.length, r.offset < t.size ? t.size - r.offset : 0);
        t.hot_bytes += r.length;
    }
    std::fprintf(stderr, "binary_fuzz: %s, %zu bytes, %zu regions (%llu bytes) to mutate\n",
                 path.c_str(), t.size, t.hot.size(), static_cast<unsigned long long>(t.hot_bytes));
    targets.push_back(std::move(t));
}

// The byte of the file the hot-space position `pos` stands for.
uint64_t hot_offset(const Target &t, uint64_t pos) {
    pos %= t.hot_bytes;
    for (const auto &r : t.hot) {
        if (pos < r.length) {
            return r.offset + pos;
        }
        pos -= r.length;
    }
    return 0;
}

uint32_t u32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// What mysqltrace learns from a server binary before it attaches anything:
// its layout read both ways (MariaDB's and MySQL's accessors), its stage sites.
void analyse(const elf::ElfFile &file) {
    // The hooks, found by the start of their mangled names as both servers
    // spell them, their entry probes, and the end-of-statement call sites.
    const auto log_slow = server::find_by_prefix(file, "_Z18log_slow_statementP3THD");
    for (const char *prefix : {"_Z16dispatch_command", "_Z20dispatch_sql_commandP3THD",
                               "_Z11mysql_parseP3THD", "_ZN3THD11enter_stage"}) {
        if (auto sym = server::find_by_prefix(file, prefix)) {
            (void)server::entry_probe_site(file, *sym);
            if (log_slow) {
                (void)server::call_sites(file, *sym, *log_slow);
                (void)server::call_follows(file, *sym, sym->vaddr, *log_slow);
            }
        }
    }
    (void)server::server_version(file, 0, 0);
    for (bool mysql : {false, true}) {
        if (auto layout = server::derive_thd_layout(file, mysql)) {
            (void)server::find_stage_sites(file, *layout);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    elf_version(EV_CURRENT);
    std::string list;
    if (const char *env = std::getenv("MYSQLTRACE_FUZZ_BINARIES")) {
        list = env;
    } else {
        list = "/usr/sbin/mariadbd:/var/cache/mysqltrace/mysql-sid/usr/sbin/mysqld";
    }
    std::stringstream ss(list);
    for (std::string path; std::getline(ss, path, ':');) {
        if (!path.empty() && ::access(path.c_str(), R_OK) == 0) {
            add_target(path);
        }
    }
    if (targets.empty()) {
        std::fprintf(stderr,
                     "binary_fuzz: no server binary to mutate (set "
                     "MYSQLTRACE_FUZZ_BINARIES)\n");
        std::exit(1);
    }
    return 0;
}

// Input: [target] [flags: 1 truncate] [u32 truncation point] then patches of
// 5 bytes, {u32 position in the hot space, u8 value xored in}.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 6) {
        return 0;
    }
    const Target &t = targets[data[0] % targets.size()];
    size_t length = t.size;
    if (data[1] & 1) {
        length = u32(data + 2) % t.size;
    }
    void *map = mmap(nullptr, t.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, t.fd, 0);
    if (map == MAP_FAILED) {
        return 0;
    }
    auto *bytes = static_cast<uint8_t *>(map);
    for (size_t i = 6; i + 5 <= size; i += 5) {
        bytes[hot_offset(t, u32(data + i))] ^= data[i + 4];
    }
    // Under the default analysis limits, as the tracer runs.
    const std::span<uint8_t> image(bytes, length);
    if (auto file = elf::ElfFile::open_memory(t.path, image)) {
        analyse(**file);
    }
    // The whole analysis, as `server --pid` runs it, with a budget of its
    // own: once a limit is hit, it must refuse the binary naming that limit.
    if (auto opened = elf::ElfFile::open_memory(t.path, image)) {
        std::shared_ptr<const elf::ElfFile> file = std::move(opened).value();
        auto target = server::analyse_server(file, "fuzz");
        if (file->budget()->exhausted() &&
            (target || target.error().message != file->budget()->exceeded()->message)) {
            std::fprintf(stderr, "binary_fuzz: a limit was hit but the analysis %s\n",
                         target ? "succeeded" : target.error().message.c_str());
            std::abort();
        }
    }
    munmap(map, t.size);
    return 0;
}

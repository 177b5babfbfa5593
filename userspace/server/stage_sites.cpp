// SPDX-License-Identifier: GPL-2.0-only
#include "server/stage_sites.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include <gelf.h>
#include <libelf.h>

#include "elf/disassembler.h"
#include "server/register_state.h"

namespace mysqltrace::server {

namespace {

constexpr size_t kPairWindow = 8;     // instructions between the m_key and the m_name stores
constexpr size_t kJccWindow = 6;      // instructions from the later store to the jcc
constexpr size_t kBlockWindow = 14;   // instructions of a PSI / profiling call block
constexpr uint64_t kColdBytes = 256;  // walked from a lea that no function symbol covers

// What is needed of the binary: .text, the stage symbols and their names,
// the functions by address.
struct Binary {
    explicit Binary(const elf::ElfFile &f) : file(f) {}

    const elf::ElfFile &file;
    uint64_t text_vaddr = 0;
    std::vector<uint8_t> text;
    std::unordered_map<uint64_t, const elf::Symbol *> stages;  // by vaddr
    std::unordered_map<uint64_t, uint64_t> relative;           // R_X86_64_RELATIVE: where -> addend
    std::vector<const elf::Symbol *> functions;                // by vaddr

    bool in_text(uint64_t vaddr) const {
        return vaddr >= text_vaddr && vaddr - text_vaddr < text.size();
    }
    const elf::Symbol *function_at(uint64_t vaddr) const {
        auto it = std::upper_bound(functions.begin(), functions.end(), vaddr,
                                   [](uint64_t v, const elf::Symbol *s) { return v < s->vaddr; });
        if (it == functions.begin()) {
            return nullptr;
        }
        const elf::Symbol *s = *--it;
        return vaddr < s->vaddr + s->size ? s : nullptr;
    }
    // A NUL-terminated string of the file, "" when there is none.
    std::string string_at(uint64_t vaddr) const {
        auto b = file.read(vaddr, 256);
        if (!b) {
            return "";
        }
        auto end = std::find(b->begin(), b->end(), 0);
        return end == b->end() ? "" : std::string(b->begin(), end);
    }
    // PSI_stage_info::m_name. In a PIE the pointer is 0 in the file and
    // filled in by a relative relocation at load time.
    std::string stage_name(uint64_t stage) const {
        const uint64_t at = stage + kPsiStageName;
        if (auto it = relative.find(at); it != relative.end()) {
            return string_at(it->second);
        }
        auto p = file.read(at, 8);
        uint64_t ptr = 0;
        if (p && p->size() == 8) {
            std::memcpy(&ptr, p->data(), 8);
        }
        return ptr != 0 ? string_at(ptr) : "";
    }
};

struct ElfCloser {
    void operator()(Elf *e) const { elf_end(e); }
};

// .text and the relocations of the stages' m_name pointers, read with libelf
// (ElfFile does not expose sections).
Result<void> read_sections(Binary &bin) {
    int fd = ::open(bin.file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return make_error(errno, "cannot open " + bin.file.path());
    }
    std::unique_ptr<Elf, ElfCloser> e(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
    size_t shstrndx = 0;
    if (!e || elf_getshdrstrndx(e.get(), &shstrndx) != 0) {
        ::close(fd);
        return Error{ENOEXEC, bin.file.path() + " is not an ELF file"};
    }
    uint64_t text_size = 0;
    for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(e.get(), scn)) != nullptr;) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr) {
            continue;
        }
        const char *name = elf_strptr(e.get(), shstrndx, sh.sh_name);
        if (name != nullptr && std::strcmp(name, ".text") == 0) {
            bin.text_vaddr = sh.sh_addr;
            text_size = sh.sh_size;
        }
        if (sh.sh_type != SHT_RELA || sh.sh_entsize == 0) {
            continue;
        }
        Elf_Data *data = elf_getdata(scn, nullptr);
        // Entries as libelf read them, as ElfFile counts symbols.
        const size_t count = data == nullptr ? 0 : data->d_size / sh.sh_entsize;
        if (!bin.file.budget()->charge(elf::Limit::relocations, count)) {
            break;
        }
        for (size_t i = 0; i < count; i++) {
            GElf_Rela r;
            if (gelf_getrela(data, static_cast<int>(i), &r) != nullptr &&
                GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE &&
                bin.stages.count(r.r_offset - kPsiStageName) != 0) {
                bin.relative[r.r_offset] = static_cast<uint64_t>(r.r_addend);
            }
        }
    }
    e.reset();
    ::close(fd);
    if (text_size == 0) {
        return Error{ENOEXEC, bin.file.path() + " has no .text section"};
    }
    if (auto &over = bin.file.budget()->exceeded()) {
        return *over;
    }
    auto text = bin.file.read(bin.text_vaddr, text_size);
    if (!text) {
        return text.error();
    }
    bin.text = std::move(*text);
    return {};
}

bool is_jcc(const cs_insn &insn) {
    if (insn.id == X86_INS_JMP || insn.id == X86_INS_JCXZ || insn.id == X86_INS_JECXZ ||
        insn.id == X86_INS_JRCXZ) {
        return false;
    }
    const cs_detail &d = *insn.detail;
    return std::find(d.groups, d.groups + d.groups_count, X86_GRP_JUMP) !=
           d.groups + d.groups_count;
}

bool is_rip_relative(const cs_x86_op &op) {
    return op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP && op.mem.index == X86_REG_INVALID;
}

uint64_t rip_target(const cs_insn &insn, const cs_x86_op &op) {
    return insn.address + insn.size + static_cast<uint64_t>(op.mem.disp);
}

// Where the source file argument of a call may come from: __FILE__ is a
// rip-relative address, often loaded once per function into a callee-saved
// register or a frame slot. Follows the registers and [rbp + d] slots in
// address order, across branches: a heuristic, checked by the file-name test.
struct FileHints {
    std::array<uint64_t, 16> reg{};
    std::unordered_map<int64_t, uint64_t> frame;

    void update(const cs_insn &insn) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        if (x.op_count == 2 && (insn.id == X86_INS_MOV || insn.id == X86_INS_LEA)) {
            auto rbp_slot = [](const cs_x86_op &o) {
                return o.type == X86_OP_MEM && o.mem.base == X86_REG_RBP &&
                       o.mem.index == X86_REG_INVALID && o.size == 8;
            };
            if (rbp_slot(op[0]) && op[1].type == X86_OP_REG && reg_slot(op[1].reg) >= 0) {
                frame[op[0].mem.disp] = reg[reg_slot(op[1].reg)];
                return;
            }
            if (op[0].type == X86_OP_REG && reg_slot(op[0].reg) >= 0) {
                uint64_t v = 0;
                if (insn.id == X86_INS_LEA && is_rip_relative(op[1])) {
                    v = rip_target(insn, op[1]);
                } else if (insn.id == X86_INS_MOV && op[1].type == X86_OP_REG &&
                           reg_slot(op[1].reg) >= 0) {
                    v = reg[reg_slot(op[1].reg)];
                } else if (insn.id == X86_INS_MOV && rbp_slot(op[1])) {
                    auto it = frame.find(op[1].mem.disp);
                    v = it != frame.end() ? it->second : 0;
                }
                reg[reg_slot(op[0].reg)] = v;
                return;
            }
        }
        for_each_written(insn, [&](int s) {
            if (s >= 0) {
                reg[s] = 0;
            }
        });
    }
};

bool looks_like_source_file(const std::string &s) {
    static const char *const exts[] = {".cc",  ".c",   ".h",  ".cpp", ".ic",
                                       ".inl", ".hpp", ".hh", ".yy"};
    if (s.size() < 3 ||
        std::any_of(s.begin(), s.end(), [](char c) { return c <= ' ' || c > '~'; })) {
        return false;
    }
    return std::any_of(std::begin(exts), std::end(exts), [&](const char *e) {
        const size_t n = std::strlen(e);
        return s.size() > n && s.compare(s.size() - n, n, e) == 0;
    });
}

struct Source {
    std::string file;
    uint32_t line = 0;
};

// The block at `vaddr` (either side of the probe's jcc) up to its first call:
// PSI start_stage(key, file, line) is an indirect call (file in rsi, line in
// edx); QUERY_PROFILE::new_status(this, status, function, file, line) a
// direct one (rcx, r8d).
Source call_source(const Binary &bin, uint64_t vaddr, FileHints hints) {
    Source src;
    if (!bin.in_text(vaddr)) {
        return src;
    }
    elf::Disassembler d(bin.file.budget(), /*detail=*/true);
    std::array<int64_t, 16> imm;
    imm.fill(-1);
    std::span<const uint8_t> code(bin.text);
    for (size_t n = 0; n < kBlockWindow && bin.in_text(vaddr); n++) {
        const cs_insn *insn = d.decode(code.subspan(vaddr - bin.text_vaddr), vaddr);
        if (insn == nullptr || insn->id == X86_INS_JMP || insn->id == X86_INS_RET) {
            break;
        }
        const cs_x86 &x = insn->detail->x86;
        if (insn->id == X86_INS_CALL) {
            const bool indirect = x.op_count == 1 && x.operands[0].type != X86_OP_IMM;
            const int line_slot = indirect ? 2 : 9;  // edx : r8d
            const int file_slot = indirect ? 6 : 1;  // rsi : rcx
            if (imm[line_slot] > 0 && imm[line_slot] < 1'000'000) {
                src.line = static_cast<uint32_t>(imm[line_slot]);
            }
            if (hints.reg[file_slot] != 0) {
                std::string f = bin.string_at(hints.reg[file_slot]);
                if (looks_like_source_file(f)) {
                    src.file = std::move(f);
                }
            }
            break;
        }
        for_each_written(*insn, [&](int s) {
            if (s >= 0) {
                imm[s] = -1;
            }
        });
        if (insn->id == X86_INS_MOV && x.op_count == 2 && x.operands[0].type == X86_OP_REG &&
            x.operands[1].type == X86_OP_IMM && reg_slot(x.operands[0].reg) >= 0) {
            imm[reg_slot(x.operands[0].reg)] = x.operands[1].imm;
        }
        hints.update(*insn);
        vaddr += insn->size;
    }
    return src;
}

// One of the two stores of an inlined enter_stage.
struct Half {
    bool set = false;
    size_t index = 0;    // instruction count in the range
    int64_t disp = 0;    // from the THD register
    uint64_t stage = 0;  // the stage_ symbol the value came from, 0 if dynamic
    uint64_t lea = 0;
};

struct Found {
    StageSite site;
    int64_t name_disp = 0, key_disp = 0;
};

// Walks code ranges in address order looking for the enter_stage shape.
class Scanner {
  public:
    // proc_info/stage_key < 0: learning them, so only sites whose stored
    // values come from a stage_ symbol are recognised, at any offsets.
    Scanner(const Binary &bin, int64_t proc_info, int64_t stage_key)
        : bin_(bin), proc_info_(proc_info), stage_key_(stage_key) {
        ok_ = cs_open(CS_ARCH_X86, CS_MODE_64, &h_) == CS_ERR_OK;
        if (ok_) {
            cs_option(h_, CS_OPT_DETAIL, CS_OPT_ON);
            insn_ = cs_malloc(h_);
        }
    }
    ~Scanner() {
        if (insn_ != nullptr) {
            cs_free(insn_, 1);
        }
        if (ok_) {
            cs_close(&h_);
        }
    }
    Scanner(const Scanner &) = delete;
    Scanner &operator=(const Scanner &) = delete;

    void scan(uint64_t start, uint64_t end, const std::string &function);

    std::vector<Found> found;
    std::set<uint64_t> leas;  // lea of a stage_ symbol

  private:
    bool learning() const { return proc_info_ < 0 || stage_key_ < 0; }
    void on_store(const SymStore &s, size_t index);
    void on_jcc(const cs_insn &insn);

    const Binary &bin_;
    int64_t proc_info_, stage_key_;
    csh h_ = 0;
    bool ok_ = false;
    cs_insn *insn_ = nullptr;

    // Per range.
    std::string function_;
    RegisterState regs_;
    FileHints hints_;
    std::array<Half, 16> name_{}, key_{};  // by THD register slot
    struct Pending {
        Half name, key;
        int slot;
        size_t deadline;
    };
    std::optional<Pending> pending_;
};

void Scanner::scan(uint64_t start, uint64_t end, const std::string &function) {
    if (!ok_ || !bin_.in_text(start)) {
        return;
    }
    end = std::min<uint64_t>(end, bin_.text_vaddr + bin_.text.size());
    function_ = function;
    regs_.clear();
    hints_ = FileHints{};
    name_.fill(Half{});
    key_.fill(Half{});
    pending_.reset();
    const uint8_t *code = bin_.text.data() + (start - bin_.text_vaddr);
    size_t size = end - start;
    uint64_t addr = start;
    elf::AnalysisBudget &budget = *bin_.file.budget();
    for (size_t index = 0; size > 0; index++) {
        if (!budget.charge(elf::Limit::instructions) ||
            !budget.check(elf::Limit::function_instructions, index + 1)) {
            return;
        }
        if (!cs_disasm_iter(h_, &code, &size, &addr, insn_)) {
            code++, size--, addr++;  // not code (padding, data): resynchronise
            regs_.clear();
            continue;
        }
        const cs_insn &insn = *insn_;
        const cs_x86 &x = insn.detail->x86;
        if (insn.id == X86_INS_LEA && x.op_count == 2 && is_rip_relative(x.operands[1]) &&
            bin_.stages.count(rip_target(insn, x.operands[1])) != 0) {
            leas.insert(insn.address);
        }
        if (pending_) {
            if (is_jcc(insn)) {
                on_jcc(insn);
                pending_.reset();
            } else if (index > pending_->deadline || insn.id == X86_INS_CALL ||
                       insn.id == X86_INS_JMP || insn.id == X86_INS_RET) {
                pending_.reset();
            } else {
                // The THD register overwritten before the probe: no longer known there.
                for_each_written(insn, [&](int s) {
                    if (s == pending_->slot) {
                        pending_->slot = -1;
                    }
                });
            }
        }
        if (auto s = regs_.store_of(insn)) {
            on_store(*s, index);
        }
        hints_.update(insn);
        regs_.step(insn);
        if (insn.id == X86_INS_JMP || insn.id == X86_INS_RET) {
            // What follows is reached from elsewhere.
            regs_.clear();
            name_.fill(Half{});
            key_.fill(Half{});
        }
    }
}

void Scanner::on_store(const SymStore &s, size_t index) {
    // Stores through rsp/rbp copy a PSI_stage_info into a local, not a THD.
    if (s.slot < 0 || s.slot == 4 || s.slot == 5) {
        return;
    }
    const SymValue &v = s.value;
    Half h{true, index, s.disp, 0, 0};
    bool is_name = false, is_key = false;
    if (v.base == SymValue::kAbsolute && v.depth == 1 && v.add == 0) {
        // *(stage_X + member): the stage is known statically.
        const auto at = static_cast<uint64_t>(v.loads[0]);
        if (s.size == 8 && bin_.stages.count(at - kPsiStageName) != 0) {
            is_name = true;
            h.stage = at - kPsiStageName;
        } else if (s.size == 4 && bin_.stages.count(at - kPsiStageKey) != 0) {
            is_key = true;
            h.stage = at - kPsiStageKey;
        }
        h.lea = v.origin;
    } else if (!learning() && v.base != SymValue::kConstant) {
        // A run-time stage: only the THD's own offsets (no bias) are trusted.
        is_name = s.size == 8 && s.disp == proc_info_;
        is_key = s.size == 4 && s.disp == stage_key_;
    }
    if (!is_name && !is_key) {
        return;
    }
    (is_name ? name_ : key_)[s.slot] = h;
    const Half &name = name_[s.slot], &key = key_[s.slot];
    if (!name.set || !key.set || name.stage != key.stage ||
        std::max(name.index, key.index) - std::min(name.index, key.index) > kPairWindow) {
        return;
    }
    // Both stores must be to the same object at the THD's relative offsets
    // (Delayed_insert embeds its THD: same pair, shifted).
    if (!learning() && name.disp - proc_info_ != key.disp - stage_key_) {
        return;
    }
    pending_ = Pending{name, key, s.slot, index + kJccWindow};
    name_[s.slot] = key_[s.slot] = Half{};
}

void Scanner::on_jcc(const cs_insn &insn) {
    const Pending &p = *pending_;
    Found f;
    f.name_disp = p.name.disp;
    f.key_disp = p.key.disp;
    StageSite &s = f.site;
    s.probe_vaddr = insn.address;
    if (auto off = bin_.file.vaddr_to_offset(insn.address)) {
        s.probe_offset = *off;
    }
    s.probe_cost = elf::classify_instruction(std::span<const uint8_t>(insn.bytes, insn.size));
    if (p.name.stage != 0) {
        s.lea_vaddr = p.name.lea;
        s.stage_symbol = bin_.stages.at(p.name.stage)->name;
        s.stage_name = bin_.stage_name(p.name.stage);
    }
    s.function = function_;
    s.thd_register = p.slot >= 0 ? slot_name(p.slot) : "";
    s.thd_bias = learning() ? 0 : p.name.disp - proc_info_;
    // The profiling / PSI calls on either side of the jcc carry __FILE__ and __LINE__.
    const cs_x86 &x = insn.detail->x86;
    Source src = call_source(bin_, insn.address + insn.size, hints_);
    if (x.op_count == 1 && x.operands[0].type == X86_OP_IMM) {
        Source other = call_source(bin_, static_cast<uint64_t>(x.operands[0].imm), hints_);
        if (src.line == 0) {
            src.line = other.line;
        }
        if (src.file.empty()) {
            src.file = other.file;
        }
    }
    s.source_file = src.file;
    s.source_line = src.line;
    found.push_back(std::move(f));
}

// A start, up to 64 bytes before the instruction at `insn`, from which
// linear decoding lands on it: code without a symbol (local functions, .cold
// parts) is scanned from there, to see the stores just before `insn` too.
uint64_t synced_start(const Binary &bin, uint64_t insn) {
    elf::Disassembler d(bin.file.budget());
    std::span<const uint8_t> text(bin.text);
    for (uint64_t back = std::min<uint64_t>(64, insn - bin.text_vaddr); back > 0; back--) {
        uint64_t pc = insn - back;
        for (const cs_insn *i; pc < insn; pc += i->size) {
            const uint64_t at = pc - bin.text_vaddr;
            if ((i = d.decode(text.subspan(at, std::min<size_t>(16, text.size() - at)), pc)) ==
                nullptr) {
                break;
            }
        }
        if (pc == insn) {
            return insn - back;
        }
    }
    return insn;
}

using Ranges = std::map<uint64_t, std::pair<uint64_t, std::string>>;  // start -> end, function

// The code to scan: functions (or, outside any, a window) holding a lea of a
// stage_ symbol, and when `key_disp` >= 0 a 32-bit store to [reg + key_disp].
void add_ranges(const Binary &bin, int64_t key_disp, Ranges &ranges) {
    auto add = [&](uint64_t insn) {
        if (const elf::Symbol *fn = bin.function_at(insn)) {
            ranges.try_emplace(fn->vaddr, fn->vaddr + fn->size, fn->name);
        } else {
            const uint64_t start = synced_start(bin, insn);
            ranges.try_emplace(start, start + kColdBytes, "");
        }
    };
    const std::vector<uint8_t> &t = bin.text;
    for (size_t i = 0; i + 7 <= t.size(); i++) {
        // lea r64, [rip + disp32]: REX.W (0x48/0x4c) 8d modrm(mod 00, rm 101).
        if ((t[i] == 0x48 || t[i] == 0x4c) && t[i + 1] == 0x8d && (t[i + 2] & 0xc7) == 0x05) {
            int32_t disp;
            std::memcpy(&disp, &t[i + 3], 4);
            const uint64_t at = bin.text_vaddr + i;
            if (bin.stages.count(at + 7 + static_cast<int64_t>(disp)) != 0) {
                add(at);
            }
        }
        // mov [reg + disp32], r32: [REX] 89 modrm(mod 10) [SIB] disp32, at i.
        int32_t disp;
        std::memcpy(&disp, &t[i], 4);
        if (key_disp < 0 || i < 4 || disp != key_disp) {
            continue;
        }
        size_t op = 0;
        if (t[i - 2] == 0x89 && (t[i - 1] & 0xc0) == 0x80 && (t[i - 1] & 7) != 4) {
            op = i - 2;
        } else if (t[i - 3] == 0x89 && (t[i - 2] & 0xc0) == 0x80 && (t[i - 2] & 7) == 4) {
            op = i - 3;
        } else {
            continue;
        }
        add(bin.text_vaddr + op - ((t[op - 1] & 0xf0) == 0x40 ? 1 : 0));
    }
}

}  // namespace

Result<StageScan> find_stage_sites(const elf::ElfFile &file, const ThdLayout &layout) {
    Binary bin(file);
    for (const auto &s : file.symbols()) {
        if (s.is_function && s.size != 0) {
            bin.functions.push_back(&s);
        } else if (!s.is_function && s.name.starts_with("stage_") &&
                   s.size >= static_cast<uint64_t>(kPsiStageName) + 8) {
            bin.stages[s.vaddr] = &s;
        }
    }
    // By address; of aliases (C1/C2 constructors...), the first name.
    std::sort(bin.functions.begin(), bin.functions.end(),
              [](const elf::Symbol *a, const elf::Symbol *b) {
                  return a->vaddr != b->vaddr ? a->vaddr < b->vaddr : a->name < b->name;
              });
    StageScan scan;
    if (bin.stages.empty()) {
        return scan;  // not a server with stages
    }
    if (auto r = read_sections(bin); !r) {
        return r.error();
    }
    scan.proc_info = layout.proc_info;
    scan.stage_key = layout.stage_key;
    Ranges ranges;
    add_ranges(bin, -1, ranges);
    if (scan.proc_info < 0 || scan.stage_key < 0) {
        // The offsets most sites store m_name and m_key to are the THD's.
        Scanner learn(bin, -1, -1);
        for (const auto &[start, r] : ranges) {
            learn.scan(start, r.first, r.second);
        }
        if (auto &over = file.budget()->exceeded()) {
            return *over;
        }
        std::map<std::pair<int64_t, int64_t>, size_t> votes;
        for (const auto &f : learn.found) {
            votes[{f.name_disp, f.key_disp}]++;
        }
        auto best = std::max_element(votes.begin(), votes.end(), [](const auto &a, const auto &b) {
            return a.second < b.second;
        });
        if (best == votes.end()) {
            scan.lea_refs = learn.leas.size();
            return scan;
        }
        scan.proc_info = best->first.first;
        scan.stage_key = best->first.second;
    }
    add_ranges(bin, scan.stage_key, ranges);
    Scanner scanner(bin, scan.proc_info, scan.stage_key);
    for (const auto &[start, r] : ranges) {
        scanner.scan(start, r.first, r.second);
    }
    scan.lea_refs = scanner.leas.size();
    // Each site becomes a uprobe.
    elf::AnalysisBudget &budget = *file.budget();
    if (!budget.check(elf::Limit::probe_sites, scanner.found.size()) || budget.exhausted()) {
        return *budget.exceeded();
    }
    std::set<uint64_t> seen;  // a cold window may overlap a function
    for (auto &f : scanner.found) {
        if (seen.insert(f.site.probe_vaddr).second) {
            (f.site.stage_symbol.empty() ? scan.dynamic_sites : scan.sites)
                .push_back(std::move(f.site));
        }
    }
    auto by_vaddr = [](const StageSite &a, const StageSite &b) {
        return a.probe_vaddr < b.probe_vaddr;
    };
    std::sort(scan.sites.begin(), scan.sites.end(), by_vaddr);
    std::sort(scan.dynamic_sites.begin(), scan.dynamic_sites.end(), by_vaddr);
    return scan;
}

}  // namespace mysqltrace::server

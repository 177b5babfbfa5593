// SPDX-License-Identifier: GPL-2.0-only
// A STAND-IN, not a server: a small program that defines functions with the
// mangled names and argument layouts of MySQL 8.0/8.4's entry points, so the
// tests can exercise mysqltrace's MySQL 8 symbol profile (symbol detection,
// argument decoding, the out-of-line THD::enter_stage probe) without an
// Oracle MySQL binary. Nothing here is MySQL code; the types only mirror
// the parts of MySQL's declarations that the tracer reads:
//   dispatch_command(THD*, const COM_DATA*, enum_server_command)
//   dispatch_sql_command(THD*, Parser_state*)
//   THD::enter_stage(const PSI_stage_info*, PSI_stage_info*, const char *func,
//                    const char *file, unsigned line)
//   thd_get_thread_id(const MYSQL_THD), thd_query_unsafe(THD*): C++ linkage
// The fake THD keeps its fields at offsets of its own, which the tracer must
// learn from the accessors' code as it would from a real build.
//
// Prints "ready", then per line read from stdin runs one command on the
// fake connection THREAD_ID and answers "done <line>":
//   query THREAD_ID SQL      COM_QUERY; statements split at each ';'
//   prepare THREAD_ID SQL    COM_STMT_PREPARE
//   initdb THREAD_ID NAME    COM_INIT_DB
//   ping THREAD_ID           COM_PING
// Compiled with -O2 -fno-omit-frame-pointer (tests/testprogs/CMakeLists.txt):
// the accessors are then the load-and-return shapes a release build has,
// and each function begins with an emulated `push %rbp`.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

struct LEX_CSTRING {
    const char *str;
    size_t length;
};

// PSI_stage_info_v1 is an ABI of the performance schema interface.
struct PSI_stage_info_v1 {
    unsigned m_key;
    const char *m_name;
    int m_flags;
};
typedef PSI_stage_info_v1 PSI_stage_info;

class Parser_state {
  public:
    int unused = 0;
};

enum enum_server_command { COM_INIT_DB = 2, COM_QUERY = 3, COM_PING = 14, COM_STMT_PREPARE = 22 };

// The COM_DATA members the tracer reads; each starts at offset 0.
struct COM_INIT_DB_DATA {
    const char *db_name;
    unsigned long length;
};
struct COM_QUERY_DATA {
    const char *query;
    unsigned int length;
    const void *parameters;
    unsigned long parameter_count;
};
struct COM_STMT_PREPARE_DATA {
    const char *query;
    unsigned int length;
};
union COM_DATA {
    COM_INIT_DB_DATA com_init_db;
    COM_QUERY_DATA com_query;
    COM_STMT_PREPARE_DATA com_stmt_prepare;
};

class THD {
  public:
    void enter_stage(const PSI_stage_info *new_stage, PSI_stage_info *old_stage,
                     const char *calling_func, const char *calling_file,
                     const unsigned int calling_line);

    char pad0_[0x128];
    unsigned long thread_id_;  // +0x128
    char pad1_[0x60];
    LEX_CSTRING query_string_;  // +0x190
    char pad2_[0x38];
    const char *proc_info_;  // +0x1d8
    unsigned stage_key_;
    unsigned long stages_entered_;
    std::string query_copy_;  // alloc_query()'s copy
};
typedef THD *MYSQL_THD;

PSI_stage_info stage_starting = {1, "starting", 0};
PSI_stage_info stage_executing = {2, "executing", 0};
PSI_stage_info stage_query_end = {3, "query end", 0};
PSI_stage_info stage_cleaning_up = {4, "cleaning up", 0};

#define STANDIN_STAGE(thd, stage) \
    (thd)->enter_stage(&(stage), nullptr, __func__, __FILE__, __LINE__)

// What the server's enter_stage calls next (the PSI stage hook): it makes
// enter_stage a non-leaf function, so it begins with `push %rbp` as it does
// in a release build of the server (probed where the kernel emulates it).
__attribute__((noipa)) unsigned standin_stage_hook(unsigned line) {
    asm volatile("" : : "r"(line) : "memory");
    return line != 0;
}

__attribute__((noipa)) void THD::enter_stage(const PSI_stage_info *new_stage,
                                             PSI_stage_info *old_stage, const char *calling_func,
                                             const char *calling_file,
                                             const unsigned int calling_line) {
    const unsigned hooked = standin_stage_hook(calling_line);
    if (old_stage != nullptr) {
        old_stage->m_key = stage_key_;
        old_stage->m_name = proc_info_;
    }
    if (new_stage != nullptr) {
        stage_key_ = new_stage->m_key;
        proc_info_ = new_stage->m_name;
        stages_entered_ += hooked && calling_func != nullptr && calling_file != nullptr;
    }
}

__attribute__((noipa)) unsigned long thd_get_thread_id(const MYSQL_THD thd) {
    return thd->thread_id_;
}

__attribute__((noipa)) LEX_CSTRING thd_query_unsafe(THD *thd) {
    return thd->query_string_;
}

__attribute__((noipa)) bool dispatch_sql_command(THD *thd, Parser_state *parser_state) {
    STANDIN_STAGE(thd, stage_executing);
    parser_state->unused += static_cast<int>(thd->query_string_.length);
    STANDIN_STAGE(thd, stage_query_end);
    return false;
}

__attribute__((noipa)) bool dispatch_command(THD *thd, const COM_DATA *com_data,
                                             enum_server_command command) {
    STANDIN_STAGE(thd, stage_starting);
    if (command == COM_QUERY) {
        // As the server does: the text is copied, each statement parsed in
        // turn with THD's query string pointing at it (and what follows).
        thd->query_copy_.assign(com_data->com_query.query, com_data->com_query.length);
        const char *p = thd->query_copy_.data();
        const char *end = p + thd->query_copy_.size();
        thd->query_string_ = {p, static_cast<size_t>(end - p)};
        Parser_state ps;
        for (;;) {
            dispatch_sql_command(thd, &ps);
            const char *semi = static_cast<const char *>(std::memchr(p, ';', end - p));
            if (semi == nullptr) {
                break;
            }
            const char *next = semi + 1;
            while (next < end && *next == ' ') {
                next++;
            }
            if (next >= end) {
                break;
            }
            STANDIN_STAGE(thd, stage_starting);
            p = next;
            thd->query_string_ = {p, static_cast<size_t>(end - p)};
        }
    } else if (command == COM_STMT_PREPARE) {
        thd->query_copy_.assign(com_data->com_stmt_prepare.query,
                                com_data->com_stmt_prepare.length);
    } else if (command == COM_INIT_DB) {
        thd->query_copy_.assign(com_data->com_init_db.db_name, com_data->com_init_db.length);
    }
    STANDIN_STAGE(thd, stage_cleaning_up);
    thd->query_string_ = {nullptr, 0};
    return false;
}

int main() {
    std::map<unsigned long, std::unique_ptr<THD>> thds;
    std::cout << "ready" << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
        std::istringstream in(line);
        std::string verb;
        unsigned long id = 0;
        in >> verb >> id;
        std::string arg;
        std::getline(in >> std::ws, arg);
        auto &thd = thds[id];
        if (!thd) {
            thd = std::make_unique<THD>();
            thd->thread_id_ = id;
        }
        COM_DATA cd;
        std::memset(&cd, 0, sizeof(cd));
        if (verb == "query") {
            cd.com_query.query = arg.c_str();
            cd.com_query.length = static_cast<unsigned>(arg.size());
            dispatch_command(thd.get(), &cd, COM_QUERY);
        } else if (verb == "prepare") {
            cd.com_stmt_prepare.query = arg.c_str();
            cd.com_stmt_prepare.length = static_cast<unsigned>(arg.size());
            dispatch_command(thd.get(), &cd, COM_STMT_PREPARE);
        } else if (verb == "initdb") {
            cd.com_init_db.db_name = arg.c_str();
            cd.com_init_db.length = arg.size();
            dispatch_command(thd.get(), &cd, COM_INIT_DB);
        } else if (verb == "ping") {
            dispatch_command(thd.get(), &cd, COM_PING);
        } else {
            std::cout << "unknown " << line << std::endl;
            continue;
        }
        std::cout << "done " << line << std::endl;
    }
    return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
// What a statement's command and text decide, kept per command and text:
// its EVENT_NAME (the leading keywords read), its DIGEST_TEXT (a lexer pass
// over the whole text, done the first time it is asked for) and what the
// owner keeps with them. Renderers and statistics look a statement up here
// instead of reading its text again: prepared statements and most
// applications' statements repeat their texts.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "server/statement.h"

namespace mysqltrace::server {

template <typename Extra>
class TextClasses {
  public:
    struct Class {
        std::string event_name;
        Extra extra{};

        // DIGEST_TEXT of `st`, a statement of this class.
        const std::string &digest(const Statement &st) {
            if (!digest_known_) {
                digest_ = digest_text(st.text);
                digest_known_ = true;
            }
            return digest_;
        }

      private:
        std::string digest_;
        bool digest_known_ = false;
    };

    // The class of `st`: valid until the next call.
    Class &of(const Statement &st) {
        key_.assign(reinterpret_cast<const char *>(&st.command), sizeof(st.command));
        key_ += st.text;
        if (auto it = by_text_.find(key_); it != by_text_.end()) {
            return it->second;
        }
        if (by_text_.size() >= kMaxTexts) {
            by_text_.clear();  // texts with literals in them: seldom seen twice
        }
        Class c;
        c.event_name = statement_event_name(st);
        return by_text_.emplace(key_, std::move(c)).first->second;
    }

  private:
    static constexpr size_t kMaxTexts = 4096;
    std::string key_;  // reused
    std::unordered_map<std::string, Class> by_text_;
};

}  // namespace mysqltrace::server

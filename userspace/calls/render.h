// SPDX-License-Identifier: GPL-2.0-only
// Renders call-tree events (calls/call_tree.h) as text, JSON lines or Chrome
// Trace Event Format. Rendering never decodes: names come from the function
// and annotation tables and from a code-address resolver given here.
//
// text, one line per event, indented by depth:
//   <time> <tid> ->-> caller > callee [call site]
//   <time> <tid> <-<- caller < callee 12.3 us [= retval]
//   <time> <tid> -># provider:name arg
//   <time> <tid> !! 3 events lost here
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calls/call_tree.h"
#include "calls/resolver.h"

namespace mysqltrace::calls {

enum class CallFormat { text, json, chrome };

struct RenderOptions {
    CallFormat format = CallFormat::text;
    bool retval = false;  // show return values
    uint32_t pid = 0;
    // Formats a CLOCK_MONOTONIC timestamp for text lines; default: local
    // wall-clock time to the ns ("HH:MM:SS.nnnnnnnnn").
    std::function<std::string(uint64_t)> time;
};

class CallRenderer {
  public:
    using Locate = std::function<CodeLocation(uint64_t)>;
    CallRenderer(RenderOptions opts, std::vector<std::string> functions,
                 std::vector<std::string> annotations, Locate locate);

    std::string header() const;
    std::string event(const CallEvent &ev);
    std::string footer() const;

  private:
    std::string caller_of(const CallEvent &ev, std::string *site);
    const std::string &function(uint32_t i) const;

    RenderOptions opts_;
    std::vector<std::string> functions_;
    std::vector<std::string> annotations_;
    Locate locate_;
    bool first_ = true;  // chrome: no comma before the first event
};

}  // namespace mysqltrace::calls

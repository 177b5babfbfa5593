// SPDX-License-Identifier: GPL-2.0-only
#include "server/read_plan.h"

#include <algorithm>
#include <numeric>

namespace mysqltrace::server {

ReadPlan plan_reads(const std::vector<ReadField> &fields, uint32_t window_max, size_t max_windows) {
    ReadPlan plan;
    plan.at.assign(fields.size(), -1);
    std::vector<size_t> order(fields.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::erase_if(order, [&](size_t i) {
        return fields[i].offset < 0 || fields[i].size == 0 || fields[i].size > window_max;
    });
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return fields[a].offset < fields[b].offset; });
    std::vector<size_t> members;
    auto close = [&] {
        if (members.empty()) {
            return;
        }
        ReadWindow &w = plan.windows.back();
        for (size_t i : members) {
            plan.at[i] = static_cast<int32_t>(w.at + (fields[i].offset - w.offset));
        }
        members.clear();
    };
    for (size_t i : order) {
        const ReadField &f = fields[i];
        const int64_t end = f.offset + f.size;
        if (!plan.windows.empty() && !members.empty() &&
            end - plan.windows.back().offset <= static_cast<int64_t>(window_max)) {
            ReadWindow &w = plan.windows.back();
            w.length =
                static_cast<uint32_t>(std::max<int64_t>(w.offset + w.length, end) - w.offset);
            members.push_back(i);
            continue;
        }
        close();
        if (plan.windows.size() == max_windows) {
            break;
        }
        plan.windows.push_back(
            ReadWindow{f.offset, f.size, static_cast<uint32_t>(plan.windows.size()) * window_max});
        members.push_back(i);
    }
    close();
    return plan;
}

int32_t plan_extra(ReadPlan &plan, std::vector<ReadField> &fields, ReadField extra,
                   uint32_t window_max, size_t max_windows) {
    fields.push_back(extra);
    ReadPlan with = plan_reads(fields, window_max, max_windows);
    bool kept = with.windows.size() <= plan.windows.size() && with.at.back() >= 0;
    for (size_t i = 0; kept && i < plan.at.size(); i++) {
        kept = plan.at[i] < 0 || with.at[i] >= 0;
    }
    if (!kept) {
        fields.pop_back();
        return -1;
    }
    plan = std::move(with);
    return plan.at.back();
}

}  // namespace mysqltrace::server

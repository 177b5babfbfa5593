// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace top`'s two ways of showing the model (top_model.h): a live
// ncurses screen with keys, or --batch, the table printed as text every
// interval (as top -b does). Both refresh every interval from a source
// (source.h) and end on q, Ctrl-C, SIGTERM or the duration with the
// terminal as it was.
#pragma once

#include <ostream>
#include <string>

#include "top/source.h"
#include "top/top_model.h"
#include "util/result.h"

namespace mysqltrace::top {

struct TopOptions {
    double interval_s = 1;
    double duration_s = 0;  // 0: until q or a signal
    size_t batch_width = 200;
};

// The interactive screen; stdin and stdout must be a terminal.
Result<void> run_screen(Source &source, Model &model, const TopOptions &opts);

// Every interval: the header, the column titles and every row, then an
// empty line, to `out`.
Result<void> run_batch(Source &source, Model &model, const TopOptions &opts, std::ostream &out);

// The keys, as the help screen and docs/top.md list them.
const char *const *help_lines();

}  // namespace mysqltrace::top

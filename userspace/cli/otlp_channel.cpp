// SPDX-License-Identifier: GPL-2.0-only
#include "cli/otlp_channel.h"

#include <unistd.h>

namespace mysqltrace::cli {

std::string otlp_host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) {
        return "";
    }
    return buf;
}

Result<std::unique_ptr<OtlpChannel>> OtlpChannel::open(output::OutputFile *file,
                                                       const std::string &url, size_t queue) {
    std::unique_ptr<OtlpChannel> c(new OtlpChannel());
    c->file_ = file;
    if (!url.empty()) {
        output::OtlpExportOptions opts;
        opts.max_queued = queue;
        auto e = output::OtlpExporter::start(url, opts);
        if (!e) {
            return e.error();
        }
        c->exporter_ = std::move(e).value();
    }
    return c;
}

const std::string &OtlpChannel::endpoint() const {
    static const std::string none;
    return exporter_ ? exporter_->endpoint() : none;
}

void OtlpChannel::send(std::string &request, size_t spans) {
    if (spans == 0) {
        return;
    }
    spans_total_ += spans;
    if (file_ != nullptr) {
        request += '\n';
        file_->write(request);
        request.pop_back();
    }
    if (exporter_) {
        exporter_->send(std::move(request), spans);
        request = std::string();
    }
}

std::string OtlpChannel::finish(std::chrono::milliseconds grace) {
    std::string out = std::to_string(spans_total_) + " spans";
    if (!exporter_) {
        return out;
    }
    exporter_->stop(grace);
    const auto s = exporter_->stats();
    out += " (OTLP " + exporter_->endpoint() + ": " + std::to_string(s.sent) + " sent, " +
           std::to_string(s.dropped) + " dropped (queue full), " + std::to_string(s.failed) +
           " failed";
    if (s.retries) {
        out += ", " + std::to_string(s.retries) + " retries";
    }
    if (!s.last_error.empty() && s.sent < spans_total_) {
        out += "; last error: " + s.last_error;
    }
    return out + ")";
}

}  // namespace mysqltrace::cli

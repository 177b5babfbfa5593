// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_export.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include <httplib.h>

namespace mysqltrace::output {

bool BatchQueue::push(std::string body, size_t spans) {
    {
        std::lock_guard lock(mu_);
        if (closed_ || q_.size() >= max_) {
            dropped_ += spans;
            return false;
        }
        q_.push_back({std::move(body), spans});
    }
    cv_.notify_one();
    return true;
}

bool BatchQueue::pop(Batch *out, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return !q_.empty() || closed_; }) || q_.empty()) {
        return false;
    }
    *out = std::move(q_.front());
    q_.pop_front();
    return true;
}

void BatchQueue::close() {
    {
        std::lock_guard lock(mu_);
        closed_ = true;
    }
    cv_.notify_all();
}

bool BatchQueue::closed() const {
    std::lock_guard lock(mu_);
    return closed_;
}

bool BatchQueue::wait_closed(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, d, [&] { return closed_; });
}

uint64_t BatchQueue::dropped() const {
    std::lock_guard lock(mu_);
    return dropped_;
}

uint64_t BatchQueue::queued_spans() const {
    std::lock_guard lock(mu_);
    uint64_t n = 0;
    for (const auto &b : q_) {
        n += b.spans;
    }
    return n;
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::start(const std::string &url,
                                                          const OtlpExportOptions &opts) {
    const size_t colon = url.find("://");
    const std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
    if (scheme != "http" && scheme != "https") {
        return Error{EINVAL, "--otlp " + url +
                                 ": give the collector's base URL, http://HOST:PORT or "
                                 "https://HOST:PORT (4318 is OTLP/HTTP's port)"};
    }
    const size_t host_at = colon + 3;
    const size_t slash = url.find('/', host_at);
    std::string hostport =
        url.substr(host_at, slash == std::string::npos ? std::string::npos : slash - host_at);
    if (hostport.empty()) {
        return Error{EINVAL, "--otlp " + url + ": no host"};
    }
    std::string prefix = slash == std::string::npos ? "" : url.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') {
        prefix.pop_back();
    }
    std::unique_ptr<OtlpExporter> e(new OtlpExporter(opts));
    e->scheme_host_port_ = scheme + "://" + hostport;
    e->path_ = prefix + opts.signal_path;
    e->endpoint_ = e->scheme_host_port_ + e->path_;
    // Signals (Ctrl-C, the end of a trace) are the tracing thread's: the
    // sender starts with all of them blocked, or a SIGINT the trace loop
    // waits for could land on it and kill the process.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    e->thread_ = std::thread([p = e.get()] { p->run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return e;
}

OtlpExporter::~OtlpExporter() {
    if (thread_.joinable()) {
        stop(std::chrono::milliseconds(0));
    }
}

void OtlpExporter::run() {
    httplib::Client client(scheme_host_port_);
    client.set_connection_timeout(
        std::chrono::duration_cast<std::chrono::seconds>(opts_.connect_timeout).count(),
        static_cast<time_t>((opts_.connect_timeout.count() % 1000) * 1000));
    client.set_read_timeout(
        std::chrono::duration_cast<std::chrono::seconds>(opts_.io_timeout).count(),
        static_cast<time_t>((opts_.io_timeout.count() % 1000) * 1000));
    client.set_write_timeout(
        std::chrono::duration_cast<std::chrono::seconds>(opts_.io_timeout).count(),
        static_cast<time_t>((opts_.io_timeout.count() % 1000) * 1000));
    client.set_keep_alive(true);
    {
        std::lock_guard lock(stop_mu_);
        client_ = &client;
    }
    BatchQueue::Batch b;
    while (queue_.pop(&b, std::chrono::steady_clock::time_point::max())) {
        bool late;
        {
            std::lock_guard lock(stop_mu_);
            late = std::chrono::steady_clock::now() >= give_up_at_;
        }
        const bool ok = !late && post(b);
        std::lock_guard lock(stats_mu_);
        (ok ? stats_.sent : stats_.failed) += b.spans;
    }
    {
        std::lock_guard lock(stop_mu_);
        client_ = nullptr;
        done_ = true;
    }
    stop_cv_.notify_all();
}

bool OtlpExporter::post(const BatchQueue::Batch &b) {
    auto backoff = opts_.first_backoff;
    for (unsigned attempt = 1;; attempt++) {
        // client_ is only set and cleared by this thread: read unguarded.
        httplib::Result res = client_->Post(path_, b.body, "application/json");
        std::string error;
        auto wait = backoff;
        bool retry = false;
        if (!res) {
            error = "cannot reach " + endpoint_ + ": " + httplib::to_string(res.error());
            retry = true;
        } else if (res->status >= 200 && res->status < 300) {
            return true;
        } else {
            error = endpoint_ + " answered " + std::to_string(res->status);
            retry = res->status == 429 || res->status == 502 || res->status == 503 ||
                    res->status == 504;
            const std::string after = res->get_header_value("Retry-After");
            uint64_t secs = 0;
            const auto r = std::from_chars(after.data(), after.data() + after.size(), secs);
            if (retry && !after.empty() && r.ec == std::errc() &&
                r.ptr == after.data() + after.size()) {
                wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(secs),
                                                           opts_.max_backoff);
            }
        }
        {
            std::lock_guard lock(stats_mu_);
            stats_.last_error = error;
        }
        if (!retry || attempt >= opts_.tries) {
            return false;
        }
        std::unique_lock lock(stop_mu_);
        const auto until = std::min(std::chrono::steady_clock::now() + wait, give_up_at_);
        stop_cv_.wait_until(lock, until,
                            [&] { return std::chrono::steady_clock::now() >= give_up_at_; });
        if (std::chrono::steady_clock::now() >= give_up_at_) {
            return false;
        }
        lock.unlock();
        {
            std::lock_guard slock(stats_mu_);
            stats_.retries++;
        }
        backoff = std::min(backoff * 2, opts_.max_backoff);
    }
}

void OtlpExporter::stop(std::chrono::milliseconds grace) {
    {
        std::lock_guard lock(stop_mu_);
        give_up_at_ = std::chrono::steady_clock::now() + grace;
    }
    queue_.close();
    stop_cv_.notify_all();
    // The thread ends once the queue is empty; a request still running at
    // the end of the grace time is cut short.
    {
        std::unique_lock lock(stop_mu_);
        if (!stop_cv_.wait_until(lock, give_up_at_, [&] { return done_; }) && client_ != nullptr) {
            client_->stop();
        }
    }
    if (thread_.joinable()) {
        thread_.join();
    }
}

OtlpExportStats OtlpExporter::stats() const {
    std::lock_guard lock(stats_mu_);
    OtlpExportStats s = stats_;
    s.dropped = queue_.dropped();
    return s;
}

}  // namespace mysqltrace::output

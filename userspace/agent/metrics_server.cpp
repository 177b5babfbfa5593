// SPDX-License-Identifier: GPL-2.0-only
#include "agent/metrics_server.h"

#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

// Debian's libcpp-httplib-dev is the library's split form: declarations in
// httplib.h, definitions in libcpp-httplib.so, built with the
// CPPHTTPLIB_*_SUPPORT macros that its pkg-config file passes on (class
// layouts depend on them); CMake takes both from there.
#include <httplib.h>

#include "agent/metrics.h"

namespace mysqltrace::agent {

namespace {

// TaskQueue::enqueue returns void in cpp-httplib 0.11 (Debian 12) and bool
// (false: refused, the socket closed) in later ones (Debian 13).
using EnqueueResult =
    decltype(std::declval<httplib::TaskQueue &>().enqueue(std::function<void()>{}));

// `workers` threads; a connection that finds none idle is served by the
// caller, the accepting thread, which accepts nothing meanwhile.
template <typename R>
class BoundedPool : public httplib::TaskQueue {
  public:
    explicit BoundedPool(size_t workers) {
        for (size_t i = 0; i < workers; i++) {
            threads_.emplace_back([this] { work(); });
        }
    }
    ~BoundedPool() override = default;

    R enqueue(std::function<void()> fn) override {
        {
            std::lock_guard lock(mu_);
            if (jobs_.size() < idle_) {
                jobs_.push_back(std::move(fn));
                cv_.notify_one();
                fn = nullptr;
            }
        }
        if (fn) {
            fn();
        }
        if constexpr (std::is_same_v<R, bool>) {
            return true;
        }
    }

    void shutdown() override {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) {
            t.join();
        }
    }

  private:
    void work() {
        std::unique_lock lock(mu_);
        for (;;) {
            idle_++;
            cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
            idle_--;
            if (jobs_.empty()) {
                return;  // stopping, nothing left
            }
            auto fn = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    size_t idle_ = 0;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

constexpr size_t kWorkers = 2;
constexpr time_t kTimeoutSeconds = 5;

}  // namespace

struct MetricsServer::Impl {
    httplib::Server http;
    std::thread thread;
    std::atomic<bool> done{false};
};

Result<ListenAddress> parse_listen_address(const std::string &text) {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
        return Error{EINVAL,
                     "--metrics-listen " + text + ": expected HOST:PORT (e.g. 127.0.0.1:9104)"};
    }
    ListenAddress a;
    a.host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') {
        a.host = a.host.substr(1, a.host.size() - 2);
    } else if (a.host.find(':') != std::string::npos) {
        return Error{
            EINVAL, "--metrics-listen " + text + ": an IPv6 address goes in brackets ([::1]:9104)"};
    } else if (a.host.empty()) {
        a.host = "0.0.0.0";
    }
    unsigned v = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), v);
    if (port.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || v > 65535) {
        return Error{EINVAL, "--metrics-listen " + text + ": the port must be a number 0-65535"};
    }
    a.port = static_cast<uint16_t>(v);
    return a;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string &listen,
                                                            std::function<std::string()> render) {
    auto addr = parse_listen_address(listen);
    if (!addr) {
        return addr.error();
    }
    // Resolved here too, for an error that says so (httplib's bind only
    // fails).
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (const int rc = ::getaddrinfo(addr->host.c_str(), nullptr, &hints, &found); rc != 0) {
        return Error{EINVAL, "cannot listen on " + listen + " (--metrics-listen): " + addr->host +
                                 ": " + ::gai_strerror(rc)};
    }
    ::freeaddrinfo(found);
    std::unique_ptr<MetricsServer> s(new MetricsServer());
    s->impl_ = std::make_unique<Impl>();
    auto &http = s->impl_->http;
    http.new_task_queue = [] { return new BoundedPool<EnqueueResult>(kWorkers); };
    // SO_REUSEADDR alone: some httplib versions also set SO_REUSEPORT,
    // with which a second agent on the same port would bind without error
    // and take half of the scrapes.
    http.set_socket_options([](int sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    http.set_read_timeout(kTimeoutSeconds, 0);
    http.set_write_timeout(kTimeoutSeconds, 0);
    // One request per connection: an idle keep-alive connection would hold
    // a worker, and the agent's exit, for its timeout.
    http.set_keep_alive_max_count(1);
    http.set_payload_max_length(1 << 16);
    http.Get("/metrics",
             [render = std::move(render)](const httplib::Request &, httplib::Response &res) {
                 res.set_content(render(), kMetricsContentType);
             });
    http.Get("/", [](const httplib::Request &, httplib::Response &res) {
        res.set_content("mysqltrace agent: Prometheus metrics at /metrics\n", "text/plain");
    });
    errno = 0;
    int port = -1;
    if (addr->port == 0) {
        port = http.bind_to_any_port(addr->host);
    } else if (http.bind_to_port(addr->host, addr->port)) {
        port = addr->port;
    }
    if (port < 0) {
        const int err = errno != 0 ? errno : EADDRNOTAVAIL;
        return Error{err,
                     "cannot listen on " + listen + " (--metrics-listen): " + std::strerror(err)};
    }
    s->port_ = static_cast<uint16_t>(port);
    const bool v6 = addr->host.find(':') != std::string::npos;
    s->url_ = "http://" + (v6 ? "[" + addr->host + "]" : addr->host) + ":" + std::to_string(port) +
              "/metrics";
    Impl *impl = s->impl_.get();
    s->impl_->thread = std::thread([impl] {
        // A scraper that goes away mid-answer must cost an EPIPE, not the
        // agent (SIGPIPE's default kills). Its worker threads inherit this.
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        impl->http.listen_after_bind();
        impl->done = true;
    });
    return s;
}

MetricsServer::~MetricsServer() {
    if (!impl_ || !impl_->thread.joinable()) {
        return;
    }
    // stop() does nothing before the thread has started listening.
    while (!impl_->http.is_running() && !impl_->done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->http.stop();
    impl_->thread.join();
}

}  // namespace mysqltrace::agent

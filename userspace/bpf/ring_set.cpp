// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/ring_set.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mysqltrace/abi/event.h"

namespace mysqltrace::bpf {

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

uint64_t ring_size(uint64_t want) {
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t size = page;
    while (size < want) {
        size <<= 1;
    }
    return size;
}

}  // namespace

uint64_t wakeup_bytes(const RingOptions &opts) {
    return ring_size(opts.bytes_per_cpu) / 8;
}

Result<void> size_scratch_slots(bpf_object *obj) {
    int ncpus = libbpf_num_possible_cpus();
    if (ncpus <= 0) {
        return make_error(ncpus, "cannot count possible CPUs");
    }
    const auto slots = static_cast<uint32_t>(ncpus) * MT_SCRATCH_SLOTS;
    for (const char *name : {"scratch", "mt_scratch_busy"}) {
        bpf_map *m = bpf_object__find_map_by_name(obj, name);
        if (m != nullptr) {
            if (int err = bpf_map__set_max_entries(m, slots); err != 0) {
                return make_error(err, std::string("cannot size map ") + name);
            }
        }
    }
    return {};
}

Result<std::unique_ptr<RingSet>> RingSet::create(bpf_object *obj, const RingOptions &opts,
                                                 RecordSink sink) {
    bpf_map *outer = bpf_object__find_map_by_name(obj, "mt_rings");
    bpf_map *stats = bpf_object__find_map_by_name(obj, "mt_stats");
    if (outer == nullptr || stats == nullptr) {
        return Error{EINVAL, "BPF object has no mt_rings/mt_stats maps"};
    }
    int ncpus = libbpf_num_possible_cpus();
    if (ncpus <= 0) {
        return make_error(ncpus, "cannot count possible CPUs");
    }
    if (ncpus > MT_MAX_CPUS) {
        return Error{E2BIG, "this machine has " + std::to_string(ncpus) +
                                " possible CPUs; mysqltrace supports at most " +
                                std::to_string(MT_MAX_CPUS)};
    }

    std::unique_ptr<RingSet> set(new RingSet(std::move(sink), opts));
    set->reorder_ = std::make_unique<ReorderBuffer>(static_cast<size_t>(ncpus));
    set->stats_fd_ = bpf_map__fd(stats);
    const uint64_t size = ring_size(opts.bytes_per_cpu);
    set->ring_bytes_ = size;
    for (int cpu = 0; cpu < ncpus; cpu++) {
        std::string name = "mt_ring" + std::to_string(cpu);
        int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, name.c_str(), 0, 0,
                                static_cast<uint32_t>(size), nullptr);
        if (fd < 0) {
            return make_error(fd, "cannot create a " + std::to_string(size >> 10) +
                                      " KiB ring buffer for CPU " + std::to_string(cpu));
        }
        set->rings_.emplace_back(fd);
        set->positions_.push_back(map_positions(fd));
        uint32_t key = static_cast<uint32_t>(cpu);
        int err = bpf_map_update_elem(bpf_map__fd(outer), &key, &fd, BPF_ANY);
        if (err != 0) {
            return make_error(errno,
                              "cannot install the ring buffer of CPU " + std::to_string(cpu));
        }
        if (cpu == 0) {
            set->rb_ = ring_buffer__new(fd, &RingSet::on_record, set.get(), nullptr);
            if (set->rb_ == nullptr) {
                return make_error(errno, "cannot map the ring buffer of CPU 0");
            }
        } else if (int e = ring_buffer__add(set->rb_, fd, &RingSet::on_record, set.get()); e < 0) {
            return make_error(e, "cannot map the ring buffer of CPU " + std::to_string(cpu));
        }
    }
    return set;
}

RingSet::~RingSet() {
    if (rb_ != nullptr) {
        ring_buffer__free(rb_);
    }
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (const auto &p : positions_) {
        for (const uint64_t *pos : {p.consumer, p.producer}) {
            if (pos != nullptr) {
                munmap(const_cast<uint64_t *>(pos), page);
            }
        }
    }
}

// A ring map's first page holds the consumer position, the next one the
// producer position (include/uapi/linux/bpf.h, BPF_MAP_TYPE_RINGBUF).
// Without them fill() does not count this ring.
RingSet::Positions RingSet::map_positions(int fd) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *consumer = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
    void *producer = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(page));
    if (consumer == MAP_FAILED || producer == MAP_FAILED) {
        for (void *m : {consumer, producer}) {
            if (m != MAP_FAILED) {
                munmap(m, page);
            }
        }
        return {};
    }
    return {static_cast<const uint64_t *>(consumer), static_cast<const uint64_t *>(producer)};
}

double RingSet::fill() const {
    uint64_t most = 0;
    for (const auto &p : positions_) {
        if (p.consumer == nullptr || p.producer == nullptr) {
            continue;
        }
        const uint64_t consumer = __atomic_load_n(p.consumer, __ATOMIC_ACQUIRE);
        const uint64_t producer = __atomic_load_n(p.producer, __ATOMIC_ACQUIRE);
        most = std::max(most, producer - consumer);
    }
    return ring_bytes_ == 0 ? 0.0 : static_cast<double>(most) / static_cast<double>(ring_bytes_);
}

int RingSet::epoll_fd() const {
    return ring_buffer__epoll_fd(rb_);
}

int RingSet::on_record(void *ctx, void *data, size_t size) {
    static_cast<RingSet *>(ctx)->accept(static_cast<const uint8_t *>(data), size);
    return 0;
}

void RingSet::accept(const uint8_t *data, size_t size) {
    mt_event_header hdr;
    if (size < sizeof(hdr)) {
        malformed_++;
        return;
    }
    std::memcpy(&hdr, data, sizeof(hdr));
    if (hdr.size != size) {
        malformed_++;
        return;
    }
    reorder_->push(hdr.cpu, hdr.ts_ns, std::span<const uint8_t>(data, size));
    // A reader kept off its CPU while copying the rings out (stopped, or
    // starved mid-drain) finds them full on its return and empties them
    // before any wakeup could show it: the fill is taken here too.
    if (++since_fill_ >= kConsumeEvery) {
        since_fill_ = 0;
        peak_fill_ = std::max(peak_fill_, fill());
    }
}

void RingSet::release(uint64_t up_to_ts, bool all) {
    reorder_->release(all ? UINT64_MAX : up_to_ts, all ? 0 : opts_.max_pending,
                      [this, all](std::span<const uint8_t> record) {
                          delivered_++;
                          sink_(record);
                          // Copying in what the producers wrote meanwhile is
                          // cheap (the reorder buffer takes it; records due
                          // by now still come out in order). Not at the end
                          // of a trace: producers still running would keep
                          // the flush from ending.
                          if (!all && ++since_consume_ >= kConsumeEvery) {
                              since_consume_ = 0;
                              peak_fill_ = std::max(peak_fill_, fill());
                              ring_buffer__consume(rb_);  // an error shows at the next poll
                          }
                      });
}

Result<int> RingSet::poll(int timeout_ms) {
    // Producers wake the reader only when a ring fills past mt_wakeup_bytes,
    // so waiting reports few rings as ready: after the wait, drain them all.
    int n = ring_buffer__poll(rb_, timeout_ms);
    if (n == -EINTR) {
        n = 0;
    } else if (n < 0) {
        return make_error(n, "reading the ring buffers failed");
    }
    int more = ring_buffer__consume(rb_);
    if (more < 0 && more != -EINTR) {
        return make_error(more, "reading the ring buffers failed");
    }
    n += std::max(more, 0);
    uint64_t now = monotonic_ns();
    release(now > opts_.reorder_window_ns ? now - opts_.reorder_window_ns : 0, false);
    return n;
}

Result<void> RingSet::flush() {
    int n = ring_buffer__consume(rb_);
    if (n < 0 && n != -EINTR) {
        return make_error(n, "draining the ring buffers failed");
    }
    release(0, true);
    return {};
}

RingStats RingSet::stats() const {
    RingStats s;
    s.delivered = delivered_;
    s.malformed = malformed_;
    s.late = reorder_->late();
    int ncpus = libbpf_num_possible_cpus();
    std::vector<mt_ring_stats> per_cpu(ncpus > 0 ? static_cast<size_t>(ncpus) : 0);
    uint32_t zero = 0;
    if (!per_cpu.empty() && bpf_map_lookup_elem(stats_fd_, &zero, per_cpu.data()) == 0) {
        for (const auto &c : per_cpu) {
            s.produced += c.events;
            s.dropped += c.drops;
            s.dropped_bytes += c.dropped_bytes;
            s.busy_drops += c.busy_drops;
            s.dropped_per_cpu.push_back(c.drops);
        }
    }
    return s;
}

}  // namespace mysqltrace::bpf

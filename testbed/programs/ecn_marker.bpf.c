// ECN marking at a switch port's egress, where the kernel has no RED: a tc (clsact egress,
// direct-action) program that keeps a virtual queue per traffic class of the port, drained as the
// port's HTB serves that class, and sets CE on an ECN-capable IPv4 packet that arrives while its
// class's virtual queue holds more than K bytes (DCTCP's marking on the instantaneous queue). The
// real FIFOs sit behind it, in HTB; the program runs as a packet is handed to them.
//   clang -O2 -target bpf -c ecn_marker.bpf.c        (-DTEST_CLOCK: the clock is skb->tstamp, for
//                                                     a test that replays a trace with PROG_TEST_RUN)
// What it drains and at what rate is in its map "config", written when it is attached and again
// when the link's rate changes (testbed.emulation.ecn): the link's rate (times HULL's drain
// fraction), K, each FIFO's limit, and how the port serves its classes: one FIFO (one virtual
// queue for every packet), strict priority (the high class's queue drains first, the rest gets
// what it leaves) or weighted (each class its assured share, and what the other leaves). A virtual
// queue is a byte count at a time, drained by the bytes the port could have sent since; the model
// is testbed.probes.markers.VirtualQueues, which a test holds this program to, packet by packet. A
// packet that finds its class's queue full (the FIFO's limit) is not counted in, as the FIFO drops
// it. What it counts, it counts per class and per IPv4 source (whose traffic a port marked: per
// job, where jobs have hosts of their own).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define CLASSES 2        // 0: the rest, 1: the high class (as the port's u32 filter sorts them)
#define SOURCES 1024     // the most IPv4 sources a port counts apart (more are counted per class only)
#define ECN_MASK 0x3
#define ECN_NOT_ECT 0x0
#define ECN_CE 0x3
#define ONE_FIFO 0
#define STRICT 1
#define WEIGHTED 2
#define NO_DSCP 0xff
#define MAX_GAP_NS 10000000000ULL   // 10 s: longer than any FIFO takes to drain, and no overflow below

struct config {
    __u64 rate_kbps;     // the rate the queues drain at, all classes together; 0: not yet configured
    __u64 k_bytes;       // the marking threshold
    __u64 limit_bytes;   // each class's FIFO limit
    __u32 mode;          // ONE_FIFO, STRICT or WEIGHTED
    __u32 high_permille; // WEIGHTED: the high class's assured share of the rate, per mille
    __u32 high_dscp[2];  // the DS fields of the high class (NO_DSCP: none)
};

struct vqueues {
    __u64 bytes[CLASSES];  // each class's virtual backlog (ONE_FIFO: all in bytes[0])
    __u64 at_ns;           // when they were last drained
};

struct counts {
    __u64 packets;       // IPv4 packets seen
    __u64 ect;           // of them ECN-capable (ECT(0), ECT(1) or already CE)
    __u64 marked;        // CE set here
    __u64 over;          // arrived with the virtual queue above K (marked or not: not ECN-capable)
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct config);
} config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct vqueues);
} queues SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CLASSES);
    __type(key, __u32);
    __type(value, struct counts);
} ecn_counts SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, SOURCES);
    __type(key, __u32);  // the source address as on the wire (network byte order)
    __type(value, struct counts);
} source_counts SEC(".maps");

static __always_inline void tally(struct counts *c, __u8 ecn, int over, int marked)
{
    __sync_fetch_and_add(&c->packets, 1);
    if (ecn != ECN_NOT_ECT)
        __sync_fetch_and_add(&c->ect, 1);
    if (over)
        __sync_fetch_and_add(&c->over, 1);
    if (marked)
        __sync_fetch_and_add(&c->marked, 1);
}

static __always_inline struct counts *of_source(__u32 source)
{
    struct counts *s = bpf_map_lookup_elem(&source_counts, &source);
    if (!s) {
        struct counts zero = {};
        bpf_map_update_elem(&source_counts, &source, &zero, BPF_NOEXIST);
        s = bpf_map_lookup_elem(&source_counts, &source);
    }
    return s;
}

static __always_inline __u64 min64(__u64 a, __u64 b) { return a < b ? a : b; }

// The bytes the port sends in gap_ns from each class's backlog, as its HTB serves them.
static __always_inline void drain(struct vqueues *q, const struct config *cfg, __u64 gap_ns)
{
    __u64 can = min64(gap_ns, MAX_GAP_NS) * cfg->rate_kbps / 8000000ULL, sent;
    if (cfg->mode == WEIGHTED) {            // each its share first, then what the other left
        __u64 share = can * cfg->high_permille / 1000;
        __u64 high = min64(q->bytes[1], share), rest = min64(q->bytes[0], can - share);
        q->bytes[1] -= high;
        q->bytes[0] -= rest;
        can -= high + rest;
    }
    sent = min64(q->bytes[1], can);         // STRICT: the high class first (WEIGHTED: its extra)
    q->bytes[1] -= sent;
    q->bytes[0] -= min64(q->bytes[0], can - sent);
}

SEC("tc")
int testbed_ecn(struct __sk_buff *skb)
{
    const __u32 headers = sizeof(struct ethhdr) + sizeof(struct iphdr);
    void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
    // A frame that ovs-vswitchd hands to a port through its packet socket may hold its headers in
    // paged data: pull them into the linear part, where the program can read them.
    if (data + headers > end) {
        if (bpf_skb_pull_data(skb, headers))
            return TC_ACT_OK;
        data = (void *)(long)skb->data;
        end = (void *)(long)skb->data_end;
    }
    struct ethhdr *eth = data;
    struct iphdr *ip = data + sizeof(*eth);
    if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;

    __u32 zero = 0;
    struct config *cfg = bpf_map_lookup_elem(&config, &zero);
    struct vqueues *q = bpf_map_lookup_elem(&queues, &zero);
    if (!cfg || !q || !cfg->rate_kbps)
        return TC_ACT_OK;
    __u8 dscp = ip->tos >> 2, ecn = ip->tos & ECN_MASK;
    __u32 class = (dscp == cfg->high_dscp[0] || dscp == cfg->high_dscp[1]) ? 1 : 0;
    __u32 queue = cfg->mode == ONE_FIFO ? 0 : class;
    struct counts *c = bpf_map_lookup_elem(&ecn_counts, &class);
    if (!c || queue >= CLASSES)
        return TC_ACT_OK;

#ifdef TEST_CLOCK
    __u64 now = skb->tstamp;
#else
    __u64 now = bpf_ktime_get_ns();
#endif
    if (now > q->at_ns) {
        drain(q, cfg, now - q->at_ns);
        q->at_ns = now;
    }
    __u64 len = skb->len, backlog = q->bytes[queue];
    __u32 source = ip->saddr;   // read before marking: setting CE may move the packet's data
    int over = backlog > cfg->k_bytes;
    int marked = over && ecn != ECN_NOT_ECT && ecn != ECN_CE && bpf_skb_ecn_set_ce(skb);
    tally(c, ecn, over, marked);
    struct counts *s = of_source(source);
    if (s)
        tally(s, ecn, over, marked);
    if (backlog + len <= cfg->limit_bytes)
        q->bytes[queue] = backlog + len;
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";

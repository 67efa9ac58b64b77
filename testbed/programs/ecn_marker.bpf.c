// ECN marking at a switch port's egress, where the kernel has no RED: a tc (clsact egress,
// direct-action) program that keeps one virtual queue per traffic class, drained at the port's
// link rate, and sets CE on an ECN-capable IPv4 packet that arrives while its class's queue holds
// more than K bytes (DCTCP's marking on the instantaneous queue). The real FIFO sits behind it, in
// HTB; the program runs as a packet is handed to it. Compiled per (rate, K) by testbed.emulation.ecn:
//   clang -O2 -target bpf -DRATE_BPS=... -DK_BYTES=... -DLIMIT_BYTES=... -c ecn_marker.bpf.c
// A virtual queue is a finish time: the moment the class's backlog would drain at the link rate.
// A packet that finds its class's queue full (LIMIT_BYTES, the FIFO's limit) is not counted in,
// as the FIFO drops it. What it counts, it counts per class and per IPv4 source (whose traffic a
// port marked: per job, where jobs have hosts of their own).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef RATE_BPS
#error "RATE_BPS: the port's link rate, bits per second"
#endif
#ifndef K_BYTES
#error "K_BYTES: the marking threshold"
#endif
#ifndef LIMIT_BYTES
#error "LIMIT_BYTES: the FIFO's limit"
#endif
#ifndef HIGH_DSCP_A
#define HIGH_DSCP_A 48  // the control class (CS6)
#endif
#ifndef HIGH_DSCP_B
#define HIGH_DSCP_B 46  // a high-priority job (EF)
#endif

#define CLASSES 2        // 0: the rest, 1: the high class (as the port's u32 filter sorts them)
#define SOURCES 1024     // the most IPv4 sources a port counts apart (more are counted per class only)
#define ECN_MASK 0x3
#define ECN_NOT_ECT 0x0
#define ECN_CE 0x3

struct vqueue {
    __u64 finish_ns;     // when the class's virtual backlog would have drained
};

struct counts {
    __u64 packets;       // IPv4 packets seen
    __u64 ect;           // of them ECN-capable (ECT(0), ECT(1) or already CE)
    __u64 marked;        // CE set here
    __u64 over;          // arrived with the virtual queue above K (marked or not: not ECN-capable)
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CLASSES);
    __type(key, __u32);
    __type(value, struct vqueue);
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

static __always_inline __u64 bytes_to_ns(__u64 bytes)
{
    return bytes * 8ULL * 1000000000ULL / RATE_BPS;
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

    __u8 dscp = ip->tos >> 2, ecn = ip->tos & ECN_MASK;
    __u32 class = (dscp == HIGH_DSCP_A || dscp == HIGH_DSCP_B) ? 1 : 0;
    struct vqueue *q = bpf_map_lookup_elem(&queues, &class);
    struct counts *c = bpf_map_lookup_elem(&ecn_counts, &class);
    if (!q || !c)
        return TC_ACT_OK;

    __u64 now = bpf_ktime_get_ns();
    __u64 start = q->finish_ns > now ? q->finish_ns : now;
    __u64 backlog_ns = start - now;
    __u64 len = skb->len;
    __u32 source = ip->saddr;   // read before marking: setting CE may move the packet's data
    int over = backlog_ns > bytes_to_ns(K_BYTES);
    int marked = over && ecn != ECN_NOT_ECT && ecn != ECN_CE && bpf_skb_ecn_set_ce(skb);
    tally(c, ecn, over, marked);
    struct counts *s = of_source(source);
    if (s)
        tally(s, ecn, over, marked);
    if (backlog_ns + bytes_to_ns(len) <= bytes_to_ns(LIMIT_BYTES))
        q->finish_ns = start + bytes_to_ns(len);
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";

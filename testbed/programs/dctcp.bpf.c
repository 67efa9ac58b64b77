// SPDX-License-Identifier: GPL-2.0
/* DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as a BPF struct_ops TCP congestion control, for
 * kernels built without tcp_dctcp: the sender keeps alpha, a moving average (gain 1/16) of the
 * fraction of its bytes whose ACKs echoed CE, and on a marked round trip cuts its window by alpha/2
 * instead of half; the receiver echoes each CE change at once, so the sender sees how many bytes were
 * marked, not only that some were. It follows the kernel's net/ipv4/tcp_dctcp.c; a connection that
 * did not negotiate ECN runs Reno instead, as the kernel's does.
 *
 * Each connection's alpha (in 1/1024) is kept in the map "alphas", keyed by its addresses and ports,
 * so that a run can read it (emulation.dctcp.alphas), with what its last update saw (the alpha
 * before, the packets delivered and those of them echoed CE) and its last cut (the window, the
 * threshold set, the alpha cut by), so that a test can hold each update and cut to the rule
 * (emulation.dctcp.seen). Compiled with -I to a vmlinux.h that bpftool dumps from this kernel's BTF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

#define MAX_ALPHA 1024U
#define SHIFT_G 4                       /* g = 1/16 */
#define ECN_OK 1                        /* tcp_sock.ecn_flags: ECN negotiated (RFC 3168) */
#define ECN_DEMAND_CWR 4
#define NEEDS_ECN 2                     /* tcp_congestion_ops.flags */
#define SOL_TCP 6
#define TCP_CONGESTION 13

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

struct connection {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;                    /* host order */
	__u16 dport;                    /* host order */
};

struct dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
	struct connection key;          /* taken at init: at release the ports are gone */
};

struct seen {
	__u32 alpha;                    /* now */
	__u32 updates;                  /* alpha's updates so far */
	__u32 prior_alpha;              /* the last update's: alpha before it */
	__u32 delivered;                /* its window's packets delivered */
	__u32 delivered_ce;             /* of them echoed CE */
	__u32 cuts;                     /* window cuts so far (ssthresh) */
	__u32 cut_cwnd;                 /* the last cut's: the window before it */
	__u32 cut_ssthresh;             /* the threshold it set */
	__u32 cut_alpha;                /* the alpha it cut by */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct connection);
	__type(value, struct seen);
} alphas SEC(".maps");

const char reno[] = "reno";

static struct tcp_sock *tcp_sk(const struct sock *sk) { return (struct tcp_sock *)sk; }
static struct dctcp *ca_of(const struct sock *sk) { return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv; }
static bool before(__u32 a, __u32 b) { return (__s32)(a - b) < 0; }
static __u32 max_u32(__u32 a, __u32 b) { return a > b ? a : b; }
static __u32 min_u32(__u32 a, __u32 b) { return a < b ? a : b; }

static struct connection key_of(const struct sock *sk)
{
	struct connection c = {
		.saddr = sk->__sk_common.skc_rcv_saddr,
		.daddr = sk->__sk_common.skc_daddr,
		.sport = sk->__sk_common.skc_num,
		.dport = __builtin_bswap16(sk->__sk_common.skc_dport),
	};
	return c;
}

static struct seen seen_of(struct dctcp *ca)
{
	struct connection c = ca->key;  /* map helpers take stack keys, not the socket's memory */
	struct seen *old = bpf_map_lookup_elem(&alphas, &c), now = {};

	if (old)
		now = *old;
	return now;
}

static void keep_seen(struct dctcp *ca, struct seen *now)
{
	struct connection c = ca->key;

	bpf_map_update_elem(&alphas, &c, now, BPF_ANY);
}

static void reset(const struct tcp_sock *tp, struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	/* A socket that takes DCTCP before connecting sends an ECN-capable SYN, which only a listener
	 * that runs DCTCP accepts ECN on (tcp_ecn_create_request): without it the connection ends here. */
	if (!(tp->ecn_flags & ECN_OK) && sk->__sk_common.skc_state != BPF_TCP_LISTEN &&
	    sk->__sk_common.skc_state != BPF_TCP_CLOSE) {
		bpf_setsockopt(sk, SOL_TCP, TCP_CONGESTION, (void *)reno, sizeof(reno));
		return;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->alpha = MAX_ALPHA;
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	ca->key = key_of(sk);
	reset(tp, ca);
}

SEC("struct_ops")
void BPF_PROG(dctcp_release, struct sock *sk)
{
	struct connection c = ca_of(sk)->key;     /* map helpers take stack keys, not the socket's memory */

	bpf_map_delete_elem(&alphas, &c);
}

SEC("struct_ops")
__u32 BPF_PROG(dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	__u32 ssthresh = max_u32(tp->snd_cwnd - ((tp->snd_cwnd * ca->alpha) >> 11U), 2U);
	struct seen now = seen_of(ca);

	ca->loss_cwnd = tp->snd_cwnd;
	now.alpha = ca->alpha;
	now.cuts++;
	now.cut_cwnd = tp->snd_cwnd;
	now.cut_ssthresh = ssthresh;
	now.cut_alpha = ca->alpha;
	keep_seen(ca, &now);
	return ssthresh;
}

SEC("struct_ops")
void BPF_PROG(dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	if (!before(tp->snd_una, ca->next_seq)) {
		__u32 delivered = tp->delivered - ca->old_delivered;
		__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		__u32 alpha = ca->alpha;
		__u32 decay = alpha >> SHIFT_G;
		struct seen now = seen_of(ca);

		now.prior_alpha = alpha;
		now.delivered = delivered;
		now.delivered_ce = delivered_ce;
		alpha -= decay ? decay : alpha;         /* min_not_zero(alpha, alpha >> g) */
		if (delivered_ce) {
			delivered_ce <<= (10 - SHIFT_G);
			delivered_ce /= max_u32(1U, delivered);
			alpha = min_u32(alpha + delivered_ce, MAX_ALPHA);
		}
		ca->alpha = alpha;
		reset(tp, ca);
		now.alpha = alpha;
		now.updates++;
		keep_seen(ca, &now);
	}
}

static void react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max_u32(tp->snd_cwnd >> 1U, 2U);
}

SEC("struct_ops")
void BPF_PROG(dctcp_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery && new_state != ((struct inet_connection_sock *)sk)->icsk_ca_state)
		react_to_loss(sk);
}

/* The receiver's ECE: demanded while the CE state it echoes is set. */
static void ece_ack_cwr(struct tcp_sock *tp, __u32 ce_state)
{
	if (ce_state)
		tp->ecn_flags |= ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~ECN_DEMAND_CWR;
}

/* The receiver: echo a change of CE state at once, after any ACK held back for the old state, which
 * carries the old state's ECE (as the kernel's dctcp_ece_ack_update: without it a held-back ACK for
 * CE packets could go out without ECE, and the sender's alpha read low). */
static void ece_ack_update(struct sock *sk, __u32 new_ce_state)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	if (ca->ce_state != new_ce_state) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			ece_ack_cwr(tp, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = new_ce_state;
	ece_ack_cwr(tp, new_ce_state);
}

SEC("struct_ops")
void BPF_PROG(dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE)
		ece_ack_update(sk, ev == CA_EVENT_ECN_IS_CE);
	else if (ev == CA_EVENT_LOSS)
		react_to_loss(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(dctcp_undo_cwnd, struct sock *sk)
{
	return max_u32(tcp_sk(sk)->snd_cwnd, ca_of(sk)->loss_cwnd);
}

SEC("struct_ops")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops testbed_dctcp = {
	.init = (void *)dctcp_init,
	.release = (void *)dctcp_release,
	.in_ack_event = (void *)dctcp_update_alpha,
	.cwnd_event = (void *)dctcp_cwnd_event,
	.ssthresh = (void *)dctcp_ssthresh,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.undo_cwnd = (void *)dctcp_undo_cwnd,
	.set_state = (void *)dctcp_state,
	.flags = NEEDS_ECN,
	.name = "testbed_dctcp",
};

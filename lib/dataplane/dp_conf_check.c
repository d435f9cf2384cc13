/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce_conf_check: every DROCE_ key the environment or the DROCE_CONF
 * file sets, against one table of the keys droce knows. A mistake must
 * stop the device with one line that names the key and its value, not
 * leave a default in its place.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "droce_conf.h"
#include "dp_internal.h"

extern char **environ;

enum ck_kind {
	CK_ANY,		/* not read by droce's libraries: scripts' keys */
	CK_STR,		/* free text of at most max characters */
	CK_NAME,	/* a device name */
	CK_NUM,		/* a number from min to max */
	CK_FLAG,	/* 0 or 1 */
	CK_WORDS,	/* one of words, '|' between them */
	CK_IPV4,
	CK_IPV6,
	CK_MAC,
	CK_NEIGH,	/* IP=MAC[,IP=MAC...] */
	CK_FAULT,	/* drop,dup,reorder,corrupt[,frames], rates in ppm */
	CK_ZC,		/* auto, off or a number of bytes */
	CK_CONF,	/* DROCE_CONF itself: environment only */
};

struct ck_key {
	const char *key;
	enum ck_kind kind;
	uint64_t min, max;	/* CK_NUM; CK_STR, CK_NAME: max length */
	const char *words;	/* CK_WORDS */
	int base;		/* CK_NUM: strtoull's base */
	unsigned int sets;	/* DROCE_KEYS_*: who reads it */
	const char *form;	/* the value's shape, for help */
	const char *help;	/* what it does; its default */
};

#define PORT DROCE_KEYS_PORT
#define VERBS DROCE_KEYS_VERBS
#define DAEMON DROCE_KEYS_DAEMON
#define SCRIPT DROCE_KEYS_SCRIPT

/*
 * Every key droce reads, and the keys droce.sh and the tests pass through
 * the environment, so that a shared file or environment is accepted by
 * both the verbs drop-in and droced. Lengths follow struct droce_conf.
 * The help is what droced --help, droce-run --help and the man pages say.
 */
static const struct ck_key ck_keys[] = {
	/* the port: verbs drop-in (in process) and droced */
	{ "DROCE_CONF", CK_CONF, 0, 0, NULL, 0, PORT, "FILE",
		"KEY=VALUE lines ('#' comments); the environment wins" },
	{ "DROCE_NAME", CK_NAME, 1, 63, NULL, 0, PORT, "NAME",
		"device name (droce0)" },
	{ "DROCE_DEVARGS", CK_STR, 0, 255, NULL, 0, PORT, "DEVARGS",
		"the DPDK device: net_memif0,..., net_af_packet0,iface=IF,..., "
		"net_tap0, net_ring0 or a PCI address (none: no port)" },
	{ "DROCE_EAL", CK_STR, 0, 511, NULL, 0, PORT, "ARGS",
		"extra EAL arguments (droce runs --in-memory --no-pci, one lcore)" },
	/* progress contexts a port can have (DP_MAX_QUEUES) */
	{ "DROCE_QUEUES", CK_NUM, 1, DP_MAX_QUEUES, NULL, 10, PORT, "N",
		"queues (progress contexts); CQs spread over them (1)" },
	{ "DROCE_IPV4", CK_IPV4, 0, 0, NULL, 0, PORT, "A.B.C.D",
		"the port's IPv4 address, GID 1" },
	{ "DROCE_IPV6", CK_IPV6, 0, 0, NULL, 0, PORT, "ADDR",
		"the port's IPv6 address, GID 2" },
	{ "DROCE_MAC", CK_MAC, 0, 0, NULL, 0, PORT, "XX:XX:XX:XX:XX:XX",
		"the port's MAC (02:00: and the IPv4 address)" },
	/* 336 carries IB MTU 256 under RoCEv2's 80 bytes of headers;
	 * 9216 is the largest jumbo frame NICs take */
	{ "DROCE_MTU", CK_NUM, 336, 9216, NULL, 10, PORT, "N",
		"Ethernet MTU, 336 to 9216; path MTU the largest IB MTU "
		"that fits (1500: 1024)" },
	{ "DROCE_NEIGH", CK_NEIGH, 0, 511, NULL, 0, PORT, "IP=MAC[,IP=MAC]",
		"static neighbours, for peers that do not answer ARP or ND" },
	{ "DROCE_FAULT", CK_FAULT, 0, 127, NULL, 0, PORT,
		"DROP,DUP,REORDER,CORRUPT[,FRAMES]",
		"fault injection on receive, in ppm (FRAMES: only the first "
		"that many); a report on stderr at close" },
	{ "DROCE_FAULT_TX", CK_FAULT, 0, 127, NULL, 0, PORT,
		"DROP,DUP,REORDER,CORRUPT[,FRAMES]",
		"the same on transmit" },
	{ "DROCE_FAULT_CE", CK_NUM, 0, 1000000, NULL, 10, PORT, "PPM",
		"mark received RoCE frames CE (congestion experienced) as a "
		"switch would, in ppm: CNPs to test with (0)" },
	{ "DROCE_ZERO_COPY", CK_ZC, 0, UINT32_MAX - 1, NULL, 10, PORT,
		"auto|off|BYTES",
		"send payloads of at least BYTES from the MR itself (auto: "
		"512 on devices that DMA, off on virtual ones)" },
	{ "DROCE_ECN", CK_FLAG, 0, 0, NULL, 0, PORT, "0|1",
		"RoCEv2 frames leave ECN-capable, ECT(0), unless the address "
		"handle's traffic class names a codepoint (1)" },
	{ "DROCE_NP_MIN_TIME_BETWEEN_CNPS", CK_NUM, 0, 1000000, NULL, 10,
		PORT, "US",
		"at most one CNP per QP in this many microseconds, for frames "
		"that came CE-marked (4, ConnectX's np_min_time_between_cnps)" },
	{ "DROCE_NP_CNP_DSCP", CK_NUM, 1, 63, NULL, 10, PORT, "DSCP",
		"the DSCP CNPs leave with (48, ConnectX's np_cnp_dscp)" },
	{ "DROCE_RXE_FLUSH_ICRC", CK_FLAG, 0, 0, NULL, 0, PORT, "0|1",
		"FLUSHes leave with Linux rxe's ICRC, which rxe (kernel >= "
		"6.2) takes, not the spec's, which it drops (0)" },
	{ "DROCE_RTO_MIN_US", CK_NUM, 1, 1000000000, NULL, 10, PORT, "US",
		"the retransmission timer's floor in microseconds: an RC "
		"requester times out after its measured round trip, no "
		"sooner than this, no later than the QP's local ACK timeout "
		"(1000)" },
	{ "DROCE_SELECTIVE_REPEAT", CK_WORDS, 0, 0, "0|1|cm", 0, PORT,
		"0|1|cm",
		"selective repeat: 1 for every RC QP, only where every peer "
		"is droce with it set too (a standard peer, rxe or a NIC, "
		"needs go-back-N); cm: per connection, where rdma_cm finds "
		"both ends offer it (0)" },
	{ "DROCE_SR_WINDOW", CK_NUM, 64, 4096, NULL, 10, PORT, "PSNS",
		"selective repeat's window: PSNs in flight and requests a "
		"responder holds out of order, rounded up to a power of 2 "
		"(1024)" },
	{ "DROCE_CC", CK_WORDS, 0, 0, "dcqcn|delay|none", 0, PORT,
		"dcqcn|delay|none",
		"congestion control: dcqcn, a QP that receives a CNP is "
		"paced at the rate DCQCN gives it; delay, the rate follows the "
		"queueing delay the requester measures (no ECN needed); none: "
		"CNPs are counted, not acted on (dcqcn)" },
	{ "DROCE_CC_DELAY_TARGET_US", CK_NUM, 1, 1000000, NULL, 10, PORT,
		"US", "the delay-based mode's target queueing delay (10)" },
	{ "DROCE_CC_DELAY_AI", CK_NUM, 1, 1000000, NULL, 10, PORT, "MBPS",
		"the delay-based mode's increase per round trip, Mbit/s (a "
		"thousandth of the line rate)" },
	{ "DROCE_CC_LINE_RATE", CK_NUM, 1, 10000000, NULL, 10, PORT, "MBPS",
		"the rate DCQCN starts from and climbs back to, Mbit/s (the "
		"link speed the PMD reports, else 100000)" },
#define RP_CHECK(name, field, lo, hi, form, help) \
	{ "DROCE_RP_" #name, CK_NUM, lo, hi, NULL, 10, PORT, form, \
		"DCQCN: " help },
	DP_RP_KEYS(RP_CHECK)
#undef RP_CHECK
	{ "DROCE_NO_HUGE", CK_FLAG, 0, 0, NULL, 0, PORT, "0|1",
		"no hugepages: EAL --no-huge -m 512 (0)" },
	/* the verbs drop-in */
	{ "DROCE_DAEMON", CK_STR, 0, 107, NULL, 0, VERBS | DAEMON, "SOCKET",
		"droced's socket: an application attaches to it, droced "
		"listens on it (/run/droce/droced.sock)" },
	{ "DROCE_DEBUG", CK_FLAG, 0, 0, NULL, 0, VERBS, "0|1",
		"say why ibv_modify_qp failed (0)" },
	{ "DROCE_EVENT_SPIN_US", CK_NUM, 0, 1000000, NULL, 10, VERBS, "US",
		"a thread in ibv_get_cq_event drives the channel's queues "
		"(attached: watches its CQs) this long before it sleeps; a "
		"completion meanwhile wakes nobody (100; 0: sleep at once)" },
	/* droced (app/droced/main.c, the same ranges) */
	{ "DROCE_DAEMON_MODE", CK_NUM, 0, 0777, NULL, 0, DAEMON, "MODE",
		"the socket's permissions, octal: who may attach (0660)" },
	{ "DROCE_POLL", CK_WORDS, 0, 0, "busy|idle", 0, DAEMON, "busy|idle",
		"busy: an lcore per queue spins; idle: the progress thread "
		"naps up to 1 ms when idle (busy)" },
	{ "DROCE_LCORES", CK_STR, 0, 255, NULL, 0, DAEMON, "LIST",
		"busy mode: EAL's --lcores, main lcore first" },
	{ "DROCE_APPS_MAX", CK_NUM, 1, 255, NULL, 0, DAEMON, "N",
		"sessions attached at once (128)" },
	{ "DROCE_APPS_PER_USER", CK_NUM, 1, 255, NULL, 0, DAEMON, "N",
		"sessions of one user other than root (64)" },
	{ "DROCE_APPS_PER_PROCESS", CK_NUM, 1, 255, NULL, 0, DAEMON, "N",
		"sessions of one process (32)" },
	{ "DROCE_APP_MAX_QP", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"QPs per application (4096)" },
	{ "DROCE_APP_MAX_CQ", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"CQs per application (4096)" },
	{ "DROCE_APP_MAX_MR", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"MRs per application (4096)" },
	{ "DROCE_APP_MAX_SRQ", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"SRQs per application (1024)" },
	{ "DROCE_APP_MAX_AH", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"AHs per application (4096)" },
	{ "DROCE_APP_MAX_PD", CK_NUM, 1, 65536, NULL, 0, DAEMON, "N",
		"PDs per application (256)" },
	{ "DROCE_APP_MAX_MR_MB", CK_NUM, 1, 1u << 30, NULL, 0, DAEMON, "MB",
		"registered memory per application (16384)" },
	{ "DROCE_APP_REGION_MB", CK_NUM, 2, 65536, NULL, 0, DAEMON, "MB",
		"each application's shared region, its rings (32)" },
	/* droce.sh and test scripts: in the environment of what they run */
	{ "DROCE_BUILD", CK_ANY, 0, 0, NULL, 0, SCRIPT, NULL, NULL },
	{ "DROCE_BUILD_ASAN", CK_ANY, 0, 0, NULL, 0, SCRIPT, NULL, NULL },
	{ "DROCE_HUGEPAGES", CK_ANY, 0, 0, NULL, 0, SCRIPT, NULL, NULL },
	{ "DROCE_PAIR_PCAP", CK_ANY, 0, 0, NULL, 0, SCRIPT, NULL, NULL },
};

#undef PORT
#undef VERBS
#undef DAEMON
#undef SCRIPT

/* help text indented by 6, words wrapped before column 78 */
static void
ck_wrap(FILE *f, const char *text)
{
	const char *w = text, *e;
	size_t col = 0;

	while (*w != '\0') {
		e = strchr(w, ' ');
		if (e == NULL)
			e = w + strlen(w);
		if (col > 0 && col + 1 + (size_t)(e - w) > 78) {
			fputc('\n', f);
			col = 0;
		}
		col += (size_t)fprintf(f, "%s%.*s", col == 0 ? "      " : " ",
			(int)(e - w), w);
		w = *e == ' ' ? e + 1 : e;
	}
	fputc('\n', f);
}

void
droce_conf_usage(FILE *f, unsigned int sets)
{
	size_t i;

	for (i = 0; i < sizeof(ck_keys) / sizeof(ck_keys[0]); i++) {
		const struct ck_key *k = &ck_keys[i];

		if ((k->sets & sets) == 0 || k->help == NULL)
			continue;
		fprintf(f, "  %s=%s\n", k->key, k->form);
		ck_wrap(f, k->help);
	}
}

static const struct ck_key *
ck_find_exact(const char *key, size_t kl)
{
	size_t i;

	for (i = 0; i < sizeof(ck_keys) / sizeof(ck_keys[0]); i++)
		if (strlen(ck_keys[i].key) == kl &&
				strncmp(ck_keys[i].key, key, kl) == 0)
			return &ck_keys[i];
	return NULL;
}

/* A key, or a port's key with its index (DROCE_IPV4_1: droced's second
 * port, droce_conf_load_port), checked as the key itself. */
static const struct ck_key *
ck_find(const char *key, size_t kl)
{
	const struct ck_key *k = ck_find_exact(key, kl);
	static const char *const per_port[] = { DROCE_CONF_PORT_KEYS };
	size_t i;

	if (k != NULL || kl < 3 || key[kl - 2] != '_' ||
			key[kl - 1] < '1' ||
			key[kl - 1] >= '0' + DROCE_CONF_MAX_PORTS)
		return k;
	for (i = 0; i < sizeof(per_port) / sizeof(per_port[0]); i++)
		if (strlen(per_port[i]) == kl - 2 &&
				strncmp(per_port[i], key, kl - 2) == 0)
			return ck_find_exact(key, kl - 2);
	return NULL;
}

/* Edit distance of a (al bytes) and b, for a misspelt key's suggestion;
 * past 31 bytes none is suggested. */
static unsigned int
ck_distance(const char *a, size_t al, const char *b)
{
	unsigned int row[32], i, j, diag, up;
	size_t bl = strlen(b);

	if (al >= 32 || bl >= 32)
		return UINT32_MAX;
	for (j = 0; j <= bl; j++)
		row[j] = j;
	for (i = 1; i <= al; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= bl; j++) {
			up = row[j];
			row[j] = RTE_MIN(RTE_MIN(up + 1, row[j - 1] + 1),
				diag + (a[i - 1] != b[j - 1]));
			diag = up;
		}
	}
	return row[bl];
}

/* The known key nearest a misspelt one, within two edits, else NULL. */
static const char *
ck_near(const char *key, size_t kl)
{
	unsigned int best = 3, d;
	const char *near = NULL;
	size_t i;

	for (i = 0; i < sizeof(ck_keys) / sizeof(ck_keys[0]); i++) {
		d = ck_distance(key, kl, ck_keys[i].key);
		if (d < best) {
			best = d;
			near = ck_keys[i].key;
		}
	}
	return near;
}

/* A whole unsigned number in base, nothing before or after it. */
static int
ck_u64(const char *s, int base, uint64_t *x)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	*x = strtoull(s, &end, base);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* Exactly six 1- or 2-digit hex bytes with ':' between them. */
static int
ck_mac(const char *s, size_t n, int unicast)
{
	size_t i = 0;
	int b, digits;
	unsigned int first = 0;

	for (b = 0; b < 6; b++) {
		unsigned int v = 0;

		for (digits = 0; i < n && digits < 3; i++, digits++) {
			char c = s[i];

			if (c >= '0' && c <= '9')
				v = v * 16 + (unsigned int)(c - '0');
			else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
				v = v * 16 + (unsigned int)((c | 0x20) - 'a' + 10);
			else
				break;
		}
		if (digits == 0 || digits > 2)
			return -1;
		if (b == 0)
			first = v;
		if (b < 5 && (i >= n || s[i++] != ':'))
			return -1;
	}
	if (i != n)
		return -1;
	return unicast && (first & 1) ? -1 : 0;
}

static int
ck_ip(const char *s, size_t n, int af)
{
	char buf[64];
	uint8_t a[16];

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(af, buf, a) == 1 ? 0 : -1;
}

/* "IP=MAC[,IP=MAC...]", ' ' or ',' between entries (droce_conf_add_neighbors) */
static const char *
ck_neigh(const char *v)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ", ");
		const char *eq = memchr(p, '=', n);

		if (n == 0) {
			p++;
			continue;
		}
		if (eq == NULL || (ck_ip(p, (size_t)(eq - p), AF_INET) != 0 &&
				ck_ip(p, (size_t)(eq - p), AF_INET6) != 0) ||
				ck_mac(eq + 1, n - (size_t)(eq - p) - 1, 0) != 0)
			return "want IP=MAC[,IP=MAC...], e.g. "
				"10.0.0.2=02:00:0a:00:00:02";
		p += n;
	}
	return NULL;
}

/* "drop,dup,reorder,corrupt[,frames]" (droce_conf_port's fault_parse) */
static const char *
ck_fault(const char *v)
{
	static const char want[] = "want drop,dup,reorder,corrupt[,frames]: "
		"rates in ppm from 0 to 1000000, frames a count";
	char buf[128], *tok, *save = NULL;
	int n = 0;
	uint64_t x;

	if (strlen(v) >= sizeof(buf))
		return want;
	snprintf(buf, sizeof(buf), "%s", v);
	if (buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return want;
	for (tok = strtok_r(buf, ",", &save); tok;
			tok = strtok_r(NULL, ",", &save), n++)
		if (ck_u64(tok, 10, &x) != 0 || (n < 4 && x > 1000000))
			return want;
	return n == 4 || n == 5 ? NULL : want;
}

/* NULL when v is a good value for k, else what is wanted. */
static const char *
ck_value(const struct ck_key *k, const char *v, char *want, size_t len)
{
	uint64_t x;
	size_t i, n = strlen(v);

	/* an empty value is the key unset, as everywhere droce reads one */
	if (n == 0)
		return NULL;
	switch (k->kind) {
	case CK_ANY:
	case CK_CONF:
		return NULL;
	case CK_STR:
		if (n <= k->max)
			return NULL;
		snprintf(want, len, "want at most %" PRIu64 " characters",
			k->max);
		return want;
	case CK_NAME:
		for (i = 0; i < n; i++)
			if (!((v[i] >= 'a' && v[i] <= 'z') ||
					(v[i] >= 'A' && v[i] <= 'Z') ||
					(v[i] >= '0' && v[i] <= '9') ||
					v[i] == '_' || v[i] == '-' || v[i] == '.'))
				break;
		if (i == n && n <= k->max)
			return NULL;
		snprintf(want, len, "want a name of 1 to %" PRIu64
			" letters, digits, '_', '-' or '.'", k->max);
		return want;
	case CK_NUM:
		if (ck_u64(v, k->base, &x) == 0 && x >= k->min && x <= k->max)
			return NULL;
		if (k->max == 0777)
			snprintf(want, len, "want a file mode from 0 to 0777");
		else
			snprintf(want, len, "want a number from %" PRIu64
				" to %" PRIu64, k->min, k->max);
		return want;
	case CK_FLAG:
		return strcmp(v, "0") == 0 || strcmp(v, "1") == 0 ? NULL :
			"want 0 or 1";
	case CK_WORDS:
		for (i = 0; k->words[i]; ) {
			size_t wl = strcspn(k->words + i, "|");

			if (wl == n && strncmp(k->words + i, v, n) == 0)
				return NULL;
			i += wl + (k->words[i + wl] ? 1 : 0);
		}
		/* "busy|idle": want busy or idle */
		n = (size_t)snprintf(want, len, "want ");
		for (i = 0; k->words[i] && n + 4 < len; i++)
			if (k->words[i] == '|')
				n += (size_t)snprintf(want + n, len - n, " or ");
			else
				want[n++] = k->words[i];
		want[n < len ? n : len - 1] = '\0';
		return want;
	case CK_IPV4:
		return ck_ip(v, n, AF_INET) == 0 ? NULL :
			"want an IPv4 address like 10.0.0.1";
	case CK_IPV6:
		return ck_ip(v, n, AF_INET6) == 0 ? NULL :
			"want an IPv6 address like fd00::1";
	case CK_MAC:
		return ck_mac(v, n, 1) == 0 ? NULL :
			"want a unicast MAC like 02:00:0a:00:00:01";
	case CK_NEIGH:
		if (n > k->max) {
			snprintf(want, len, "want at most %" PRIu64
				" characters", k->max);
			return want;
		}
		return ck_neigh(v);
	case CK_FAULT:
		return ck_fault(v);
	case CK_ZC:
		if (strcmp(v, "auto") == 0 || strcmp(v, "off") == 0 ||
				(ck_u64(v, k->base, &x) == 0 && x <= k->max))
			return NULL;
		snprintf(want, len, "want auto, off or a number of bytes "
			"from 0 (off) to %" PRIu64, k->max);
		return want;
	}
	return NULL;
}

static int
ck_fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* One KEY=VALUE: known, and its value good; where says where it was. */
static int
ck_pair(const char *key, size_t kl, const char *v, const char *where,
	char *err, size_t len)
{
	const struct ck_key *k = ck_find(key, kl);
	char want[128];
	const char *w;

	if (k == NULL) {
		const char *near = ck_near(key, kl);

		return ck_fail(err, len, "droce: %.*s=%s: unknown key (%s)%s%s%s",
			(int)kl, key, v, where, near ? "; did you mean " : "",
			near ? near : "", near ? "?" : "");
	}
	if (k->kind == CK_CONF && strcmp(where, "environment") != 0)
		return ck_fail(err, len, "droce: %.*s=%s: only in the "
			"environment (%s)", (int)kl, key, v, where);
	w = ck_value(k, v, want, sizeof(want));
	if (w == NULL)
		return 0;
	if (strcmp(where, "environment") == 0)
		return ck_fail(err, len, "droce: %.*s=%s: %s", (int)kl, key,
			v, w);
	return ck_fail(err, len, "droce: %.*s=%s (%s): %s", (int)kl, key, v,
		where, w);
}

/* The DROCE_CONF file: each line KEY=VALUE, a '#' comment or blank. */
static int
ck_file(char *err, size_t len)
{
	const char *path, *line, *text;
	char where[320], val[512];
	int rc, lineno = 0;

	text = dp_conf_file(&path, &rc);
	if (path == NULL)
		return 0;
	if (rc != 0)
		return ck_fail(err, len, "droce: DROCE_CONF=%s: %s", path,
			rc == EFBIG ? "longer than 8191 bytes" : strerror(rc));
	for (line = text; *line; ) {
		const char *end = strchr(line, '\n'), *eq, *k;
		size_t n = end ? (size_t)(end - line) : strlen(line), kl, vl;

		lineno++;
		snprintf(where, sizeof(where), "DROCE_CONF %s line %d", path,
			lineno);
		k = line;
		line += n + (end ? 1 : 0);
		while (n && (*k == ' ' || *k == '\t')) {
			k++;
			n--;
		}
		while (n && (k[n - 1] == ' ' || k[n - 1] == '\t' ||
				k[n - 1] == '\r'))
			n--;
		if (n == 0 || *k == '#')
			continue;
		eq = memchr(k, '=', n);
		kl = eq ? (size_t)(eq - k) : 0;
		if (eq == NULL || kl == 0 || strspn(k,
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != kl)
			return ck_fail(err, len, "droce: %s: want KEY=VALUE, "
				"a '#' comment or a blank line, not \"%.*s\"",
				where, (int)n, k);
		vl = n - kl - 1;
		if (vl >= sizeof(val))
			return ck_fail(err, len, "droce: %.*s (%s): a value of "
				"at most %zu characters", (int)kl, k, where,
				sizeof(val) - 1);
		memcpy(val, eq + 1, vl);
		val[vl] = '\0';
		rc = ck_pair(k, kl, val, where, err, len);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
droce_conf_check(char *err, size_t len)
{
	char **e;
	int rc;

	if (err != NULL && len > 0)
		err[0] = '\0';
	for (e = environ; e != NULL && *e != NULL; e++) {
		const char *eq = strchr(*e, '=');

		if (strncmp(*e, "DROCE_", 6) != 0 || eq == NULL)
			continue;
		rc = ck_pair(*e, (size_t)(eq - *e), eq + 1, "environment",
			err, len);
		if (rc != 0)
			return rc;
	}
	return ck_file(err, len);
}

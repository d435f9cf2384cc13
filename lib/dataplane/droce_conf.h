/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_CONF_H
#define DROCE_CONF_H

/**
 * @file
 * droce's configuration keys, read the same way by the verbs drop-in (a
 * device in the process) and by droced: each key from the environment,
 * else from the file DROCE_CONF names (lines KEY=VALUE, '#' comments).
 *
 *   DROCE_NAME     device name (droce0)
 *   DROCE_DEVARGS  the DPDK device, e.g. net_memif0,role=server,socket=/x
 *   DROCE_EAL      extra EAL arguments
 *   DROCE_QUEUES   queues (progress contexts), default 1
 *   DROCE_IPV4     the port's IPv4 address (GID 1)
 *   DROCE_IPV6     an IPv6 address (GID 2)
 *   DROCE_MAC      the port's MAC (default 02:00 + the IPv4 address)
 *   DROCE_MTU      Ethernet MTU (1500)
 *   DROCE_NEIGH    static neighbours "IP=MAC[,IP=MAC...]"
 *   DROCE_FAULT    fault injection on receive "drop,dup,reorder,corrupt"
 *                  ppm, optionally ",frames": only the first that many
 *   DROCE_FAULT_TX the same on transmit
 *   DROCE_ZERO_COPY  send payloads of at least this many bytes from the
 *                  MR itself; "off", or "auto" (the default)
 *   DROCE_NO_HUGE  1: EAL without hugepages (--no-huge -m 512)
 *   DROCE_DAEMON   (verbs drop-in) attach to the droced on this socket
 *   DROCE_DEBUG    (verbs drop-in) 1: say why a verbs call failed
 * and droced's own (app/droced/main.c): DROCE_DAEMON_MODE, DROCE_POLL,
 * DROCE_LCORES, DROCE_APP_MAX_{QP,CQ,MR,SRQ,AH,PD,MR_MB},
 * DROCE_APP_REGION_MB. droce_conf_check knows them all (dp_conf_check.c
 * has the table: each key's format and range).
 */

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "droce.h"

#ifdef __cplusplus
extern "C" {
#endif

struct droce_conf {
	char name[64];
	char devargs[256];
	char eal[512];
	char fault[128];
	char fault_tx[128];
	char neigh[512];
	uint32_t queues;
	uint32_t zc_min;	/**< DROCE_ZC_* or bytes */
	int no_ecn;		/**< DROCE_ECN=0 */
	uint32_t np_gap_ns;	/**< DROCE_NP_MIN_TIME_BETWEEN_CNPS, 0: default */
	uint8_t np_cnp_dscp;	/**< DROCE_NP_CNP_DSCP, 0: default */
	uint32_t fault_ce_ppm;	/**< DROCE_FAULT_CE */
	uint8_t cc;		/**< DROCE_CC: enum droce_cc_mode */
	uint32_t line_rate_mbps;	/**< DROCE_CC_LINE_RATE, 0: the link's */
	uint8_t dcqcn_set;	/**< some DROCE_RP_ key was set */
	struct droce_dcqcn_params dcqcn;	/**< DROCE_RP_*, else defaults */
	uint32_t delay_target_ns;	/**< DROCE_CC_DELAY_TARGET_US */
	uint32_t delay_ai_mbps;		/**< DROCE_CC_DELAY_AI */
	uint32_t ipv4;		/**< host order, 0: none */
	uint32_t mtu;
	uint8_t mac[6];
	uint8_t ipv6[16];
	int has_ipv6;
	int rxe_flush_icrc;	/**< DROCE_RXE_FLUSH_ICRC */
	uint32_t rto_min_us;	/**< DROCE_RTO_MIN_US, 0: the default */
	int selective_repeat;	/**< DROCE_SELECTIVE_REPEAT: enum droce_sr_mode */
	uint32_t sr_window;	/**< DROCE_SR_WINDOW, 0: the default */
};

/** The value of key: the environment, else DROCE_CONF's file, else NULL.
 * The string lives until the next call from the same thread. */
const char *droce_conf_get(const char *key);

/**
 * Check every DROCE_ key the environment and the DROCE_CONF file set: an
 * unknown key, a malformed or out-of-range value, a file line that is not
 * KEY=VALUE, a comment or blank, or a DROCE_CONF that cannot be read.
 * An empty value is the key unset.
 *
 * @return 0, or -EINVAL with one line in err (len bytes, no newline)
 *   naming the key, its value and where it was set, e.g.
 *   "droce: DROCE_MTU=abc: want a number from 336 to 9216"; an unknown
 *   key within two edits of a known one names that one.
 */
int droce_conf_check(char *err, size_t len);

/** Who reads a key, for droce_conf_usage. */
#define DROCE_KEYS_PORT		1u	/* the port: drop-in and droced */
#define DROCE_KEYS_VERBS	2u	/* the verbs drop-in */
#define DROCE_KEYS_DAEMON	4u	/* droced */
#define DROCE_KEYS_SCRIPT	8u	/* droce.sh's: accepted, never read */

/**
 * droced's ports: port 0 reads the keys above, port N (1 to
 * DROCE_CONF_MAX_PORTS - 1) the same keys with "_N" (DROCE_DEVARGS_1,
 * DROCE_IPV4_1, ...). A port has a DROCE_DEVARGS_N of its own; its
 * DROCE_QUEUES_N, DROCE_MTU_N, DROCE_ZERO_COPY_N and DROCE_FAULT(_TX)_N
 * default to port 0's values, its name to droceN, its addresses to none.
 */
#define DROCE_CONF_MAX_PORTS 4
#define DROCE_CONF_PORT_KEYS "DROCE_NAME", "DROCE_DEVARGS", "DROCE_QUEUES", \
	"DROCE_IPV4", "DROCE_IPV6", "DROCE_MAC", "DROCE_MTU", "DROCE_NEIGH", \
	"DROCE_FAULT", "DROCE_FAULT_TX", "DROCE_ZERO_COPY"

/** Port port's keys into c (droce_conf_load for port 0). */
void droce_conf_load_port(struct droce_conf *c, unsigned int port);

/** How many ports the keys configure: 1 + the last N with
 * DROCE_DEVARGS_N set, each before it set too (else 0 and err says
 * which is missing). */
int droce_conf_nb_ports(char *err, size_t len);

/** Print the keys read by any of sets, each with its value's shape and
 * what it does, two lines a key (help texts and man pages). */
void droce_conf_usage(FILE *f, unsigned int sets);

/** Every key above into c (defaults where unset); droce_conf_check
 * first, or malformed values are read as best they can be. */
void droce_conf_load(struct droce_conf *c);

/**
 * A port configuration from c, in mode: EAL arguments (written to eal,
 * eal_len bytes: in-memory, no PCI, quiet, the main lcore on a CPU the
 * process may use, then DROCE_EAL), device, addresses, faults.
 */
void droce_conf_port(const struct droce_conf *c, struct droce_port_conf *pc,
		enum droce_progress_mode mode, char *eal, size_t eal_len);

/** DROCE_NEIGH's entries into the port's neighbour table. */
void droce_conf_add_neighbors(struct droce_port *port, const struct droce_conf *c);

/** With DROCE_FAULT(_TX) set, print what fault injection did on the port
 * to stderr (whoever set it wants to know the faults happened). */
void droce_conf_fault_report(struct droce_port *port, const struct droce_conf *c);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_CONF_H */

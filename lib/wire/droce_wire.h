/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_WIRE_H
#define DROCE_WIRE_H

/**
 * @file
 * droce wire library: RoCEv2 frames from the Ethernet header to the ICRC.
 *
 * One opcode table (droce_opcode_info[]) drives both the builder and the
 * parser. A frame is described by struct droce_pkt: the parser fills it
 * from a frame (pointing payload into the frame), the builder writes a
 * frame from it. Neither needs DPDK to be running: plain buffers in, plain
 * buffers out, so lib/transport and the tests use it without EAL.
 *
 * Byte order: every field of struct droce_pkt is in host order, except
 * imm_data which, as in the verbs API, stays in network order.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** UDP destination port of RoCEv2 (IANA). */
#define DROCE_ROCE_UDP_PORT 4791

/** Header sizes in bytes (IBTA vol.1 ch.9, Annex A17). */
#define DROCE_ETH_HLEN 14
#define DROCE_VLAN_HLEN 4
#define DROCE_IPV4_HLEN 20
#define DROCE_IPV6_HLEN 40
#define DROCE_UDP_HLEN 8
#define DROCE_BTH_LEN 12
#define DROCE_RETH_LEN 16
#define DROCE_AETH_LEN 4
#define DROCE_ATMETH_LEN 28
#define DROCE_ATMACK_LEN 8
/** Payload of an ATOMIC WRITE (IBTA 1.5): one 64-bit word. */
#define DROCE_ATOMIC_WRITE_LEN 8
#define DROCE_IMMDT_LEN 4
#define DROCE_IETH_LEN 4
/** FLUSH extension header (IBTA 1.5): placement type and selectivity. */
#define DROCE_FETH_LEN 4
#define DROCE_DETH_LEN 8
/** XRCETH: the XRC SRQ number of the target (24 bits after a reserved byte). */
#define DROCE_XRCETH_LEN 4
#define DROCE_ICRC_LEN 4
/** The GRH that a UD receive buffer starts with. */
#define DROCE_GRH_LEN 40

/** Largest header stack a frame can carry: Eth+VLAN+IPv6+UDP+BTH+ext. */
#define DROCE_MAX_HDR_LEN (DROCE_ETH_HLEN + DROCE_VLAN_HLEN + \
	DROCE_IPV6_HLEN + DROCE_UDP_HLEN + DROCE_BTH_LEN + \
	DROCE_RETH_LEN + DROCE_IMMDT_LEN + DROCE_DETH_LEN + \
	DROCE_XRCETH_LEN)

/** Extension headers an opcode carries after the BTH (droce_opcode_info.hdrs). */
enum droce_hdr_mask {
	DROCE_HDR_RETH = 1u << 0,
	DROCE_HDR_AETH = 1u << 1,
	DROCE_HDR_ATMETH = 1u << 2,
	DROCE_HDR_ATMACK = 1u << 3,
	DROCE_HDR_IMMDT = 1u << 4,
	DROCE_HDR_IETH = 1u << 5,
	DROCE_HDR_DETH = 1u << 6,
	DROCE_HDR_CNP = 1u << 7,	/**< 16 reserved bytes of a CNP */
	DROCE_HDR_FETH = 1u << 8,	/**< IBTA 1.5 FLUSH: before the RETH */
	DROCE_HDR_XRCETH = 1u << 9,	/**< XRC requests: after the BTH (and
					 *   DETH), before RETH/AtomicETH */
};

/** FETH fields (IBTA 1.5 o9-76): placement type in bits 3:0, selectivity
 *  level in bits 5:4; the rest reserved. */
#define DROCE_FETH_PLT_MASK 0x0fu
#define DROCE_FETH_SEL_SHIFT 4
#define DROCE_FETH_SEL_MASK 0x30u
/** Placement types (a bit mask) and selectivity levels, as in rdma-core's
 *  enum ibv_placement_type and enum ibv_selectivity_level. */
#define DROCE_FLUSH_GLOBAL 1u
#define DROCE_FLUSH_PERSISTENT 2u
#define DROCE_FLUSH_RANGE 0u
#define DROCE_FLUSH_MR 1u

/** What an opcode means (droce_opcode_info.flags). */
enum droce_op_flag {
	DROCE_OPF_REQ = 1u << 0,	/**< sent by a requester */
	DROCE_OPF_RESP = 1u << 1,	/**< sent by a responder (ACK, READ resp) */
	DROCE_OPF_SEND = 1u << 2,
	DROCE_OPF_WRITE = 1u << 3,
	DROCE_OPF_READ = 1u << 4,	/**< READ request or response */
	DROCE_OPF_ATOMIC = 1u << 5,	/**< atomic request or atomic ACK */
	DROCE_OPF_ACK = 1u << 6,	/**< plain ACK/NAK */
	DROCE_OPF_START = 1u << 7,	/**< First or Only */
	DROCE_OPF_MIDDLE = 1u << 8,
	DROCE_OPF_END = 1u << 9,	/**< Last or Only */
	DROCE_OPF_PAYLOAD = 1u << 10,	/**< may carry payload */
	DROCE_OPF_IMM = 1u << 11,	/**< carries ImmDt */
	DROCE_OPF_INV = 1u << 12,	/**< carries IETH (send with invalidate) */
	DROCE_OPF_RWR = 1u << 13,	/**< consumes a receive WR at the responder */
	DROCE_OPF_WANT_ACK = 1u << 14,	/**< RC request that the responder ACKs or answers */
	DROCE_OPF_CNP = 1u << 15,
	/** IBTA 1.5 ATOMIC WRITE: RETH and 8 bytes, executed as one 64-bit
	 *  store and answered like a READ (a zero-length READ response) */
	DROCE_OPF_ATOMIC_WRITE = 1u << 16,
	/** IBTA 1.5 FLUSH: FETH and RETH, no payload, answered like an
	 *  ATOMIC WRITE once the range is visible or persistent */
	DROCE_OPF_FLUSH = 1u << 17,
};

/** Transport of an opcode: the top three bits of the BTH opcode. */
enum droce_transport {
	DROCE_TRANSPORT_RC = 0x00,
	DROCE_TRANSPORT_UC = 0x20,
	DROCE_TRANSPORT_RD = 0x40,
	DROCE_TRANSPORT_UD = 0x60,
	DROCE_TRANSPORT_CNP = 0x80,
	DROCE_TRANSPORT_XRC = 0xa0,	/**< RC's opcodes + 0xa0, XRCETH on requests */
};

/** The transport bits of a BTH opcode (enum droce_transport). */
#define DROCE_TRANSPORT_MASK 0xe0

/** BTH opcodes (IBTA vol.1 table 38) that droce knows. */
enum droce_opcode {
	DROCE_OP_RC_SEND_FIRST = 0x00,
	DROCE_OP_RC_SEND_MIDDLE = 0x01,
	DROCE_OP_RC_SEND_LAST = 0x02,
	DROCE_OP_RC_SEND_LAST_IMM = 0x03,
	DROCE_OP_RC_SEND_ONLY = 0x04,
	DROCE_OP_RC_SEND_ONLY_IMM = 0x05,
	DROCE_OP_RC_WRITE_FIRST = 0x06,
	DROCE_OP_RC_WRITE_MIDDLE = 0x07,
	DROCE_OP_RC_WRITE_LAST = 0x08,
	DROCE_OP_RC_WRITE_LAST_IMM = 0x09,
	DROCE_OP_RC_WRITE_ONLY = 0x0a,
	DROCE_OP_RC_WRITE_ONLY_IMM = 0x0b,
	DROCE_OP_RC_READ_REQ = 0x0c,
	DROCE_OP_RC_READ_RESP_FIRST = 0x0d,
	DROCE_OP_RC_READ_RESP_MIDDLE = 0x0e,
	DROCE_OP_RC_READ_RESP_LAST = 0x0f,
	DROCE_OP_RC_READ_RESP_ONLY = 0x10,
	DROCE_OP_RC_ACK = 0x11,
	DROCE_OP_RC_ATOMIC_ACK = 0x12,
	DROCE_OP_RC_CMP_SWAP = 0x13,
	DROCE_OP_RC_FETCH_ADD = 0x14,
	DROCE_OP_RC_SEND_LAST_INV = 0x16,
	DROCE_OP_RC_SEND_ONLY_INV = 0x17,
	DROCE_OP_RC_FLUSH = 0x1c,	/**< IBTA 1.5 */
	DROCE_OP_RC_ATOMIC_WRITE = 0x1d,	/**< IBTA 1.5 */
	/* UC: RC's 0x00..0x0b with the UC transport bits */
	DROCE_OP_UC_SEND_FIRST = 0x20,
	DROCE_OP_UC_SEND_MIDDLE = 0x21,
	DROCE_OP_UC_SEND_LAST = 0x22,
	DROCE_OP_UC_SEND_LAST_IMM = 0x23,
	DROCE_OP_UC_SEND_ONLY = 0x24,
	DROCE_OP_UC_SEND_ONLY_IMM = 0x25,
	DROCE_OP_UC_WRITE_FIRST = 0x26,
	DROCE_OP_UC_WRITE_MIDDLE = 0x27,
	DROCE_OP_UC_WRITE_LAST = 0x28,
	DROCE_OP_UC_WRITE_LAST_IMM = 0x29,
	DROCE_OP_UC_WRITE_ONLY = 0x2a,
	DROCE_OP_UC_WRITE_ONLY_IMM = 0x2b,
	/* XRC: RC's 0x00..0x17 with the XRC transport bits */
	DROCE_OP_XRC_SEND_FIRST = 0xa0,
	DROCE_OP_XRC_SEND_ONLY = 0xa4,
	DROCE_OP_XRC_WRITE_FIRST = 0xa6,
	DROCE_OP_XRC_WRITE_ONLY = 0xaa,
	DROCE_OP_XRC_READ_REQ = 0xac,
	DROCE_OP_XRC_READ_RESP_ONLY = 0xb0,
	DROCE_OP_XRC_ACK = 0xb1,
	DROCE_OP_XRC_ATOMIC_ACK = 0xb2,
	DROCE_OP_XRC_CMP_SWAP = 0xb3,
	DROCE_OP_XRC_FETCH_ADD = 0xb4,
	DROCE_OP_XRC_SEND_ONLY_INV = 0xb7,
	DROCE_OP_UD_SEND_ONLY = 0x64,
	DROCE_OP_UD_SEND_ONLY_IMM = 0x65,
	DROCE_OP_CNP = 0x81,
};

/* The ECN field: the low two bits of the IPv4 TOS / IPv6 traffic class
 * (RFC 3168). */
#define DROCE_ECN_MASK		0x3
#define DROCE_ECN_NOT_ECT	0x0
#define DROCE_ECN_ECT1		0x1
#define DROCE_ECN_ECT0		0x2
#define DROCE_ECN_CE		0x3


/** One row of the opcode table. valid is 0 for opcodes droce does not know. */
struct droce_opcode_info {
	const char *name;	/**< IBTA name, e.g. "RC_SEND_ONLY" */
	uint32_t flags;		/**< enum droce_op_flag bits */
	uint16_t hdrs;		/**< enum droce_hdr_mask bits */
	uint8_t valid;
	uint8_t hdr_len;	/**< BTH + extension headers, bytes */
	uint8_t off_reth;	/**< offsets from the BTH start, 0 = absent */
	uint8_t off_aeth;
	uint8_t off_atmeth;
	uint8_t off_atmack;
	uint8_t off_immdt;
	uint8_t off_ieth;
	uint8_t off_deth;
	uint8_t off_feth;
	uint8_t off_xrceth;
	uint8_t off_payload;	/**< == hdr_len */
};

/** Indexed by BTH opcode. */
extern const struct droce_opcode_info droce_opcode_info[256];

/** Parser verdicts: 0 is success, each defect has its own negative code. */
enum droce_wire_err {
	DROCE_WIRE_OK = 0,
	DROCE_WIRE_ETRUNC = -1,		/**< frame shorter than its headers */
	DROCE_WIRE_EETHERTYPE = -2,	/**< not IPv4/IPv6 (after an optional VLAN tag) */
	DROCE_WIRE_EIPVER = -3,		/**< IP version field disagrees with the ethertype */
	DROCE_WIRE_EIPPROTO = -4,	/**< not UDP, or IPv4 options/fragments */
	DROCE_WIRE_EUDPPORT = -5,	/**< UDP destination port is not 4791 */
	DROCE_WIRE_EIPLEN = -6,		/**< IP/UDP length disagrees with the frame */
	DROCE_WIRE_EIPCSUM = -7,	/**< bad IPv4 header checksum */
	DROCE_WIRE_ETVER = -8,		/**< BTH TVer not 0 */
	DROCE_WIRE_EOPCODE = -9,	/**< unknown opcode */
	DROCE_WIRE_ETRANSPORT = -10,	/**< opcode of a transport the caller did not expect */
	DROCE_WIRE_EEXTHDR = -11,	/**< frame too short for the extension headers */
	DROCE_WIRE_EPADCNT = -12,	/**< payload and pad not whole words, pad > payload */
	DROCE_WIRE_EMTU = -13,		/**< payload longer than the path MTU (*) */
	DROCE_WIRE_EICRC = -14,		/**< bad ICRC */
	DROCE_WIRE_EUDPCSUM = -15,	/**< non-zero UDP checksum that does not verify */
	DROCE_WIRE_ELENGTH = -16,	/**< PadCnt on a packet that does not end a
					 *   message, payload on an opcode without (*) */
	DROCE_WIRE_ERR_COUNT = 17,	/**< number of verdicts, for counter arrays */
};

/** Human-readable name of a droce_wire_err value. */
const char *droce_wire_strerror(int err);

/**
 * A RoCEv2 frame, decoded. Addresses are 16-byte GIDs: an IPv4 address is
 * stored IPv4-mapped (::ffff:a.b.c.d), as RoCEv2 GIDs are.
 */
struct droce_pkt {
	/* Ethernet */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint8_t has_vlan;
	uint16_t vlan_tci;
	/* IP */
	uint8_t ip_ver;		/**< 4 or 6 */
	uint8_t tclass;		/**< IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;		/**< IPv4 TTL / IPv6 hop limit */
	uint8_t ip_df;		/**< IPv4 don't-fragment bit */
	uint16_t ip_id;		/**< IPv4 identification */
	uint32_t flow_label;	/**< IPv6 flow label (20 bits) */
	uint8_t sgid[16];
	uint8_t dgid[16];
	/* UDP */
	uint16_t udp_sport;
	uint16_t udp_dport;	/**< 4791 */
	uint16_t udp_csum;	/**< as on the wire; builder: IPv4 0 = send 0 (as rxe),
				 *   else computed; IPv6 always computed */
	/* BTH */
	uint8_t opcode;
	uint8_t se;
	uint8_t migreq;
	uint8_t padcnt;		/**< parser: from the frame; builder: computed */
	uint8_t tver;
	uint16_t pkey;
	uint8_t fecn;
	uint8_t becn;
	uint8_t bth_resv6;	/**< reserved bits of byte 4, kept for re-encoding */
	uint32_t dqpn;		/**< 24 bits */
	uint8_t ackreq;
	uint8_t bth_resv7;	/**< reserved bits of byte 8 */
	uint32_t psn;		/**< 24 bits */
	/* extension headers, valid as droce_opcode_info[opcode].hdrs says */
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;	/**< 24 bits */
	uint64_t atm_va;
	uint32_t atm_rkey;
	uint64_t atm_swap_add;
	uint64_t atm_compare;
	uint64_t atmack_orig;
	uint32_t imm_data;	/**< network byte order, as ibv_send_wr.imm_data */
	uint32_t ieth_rkey;
	/* FETH (FLUSH) */
	uint8_t feth_plt;	/**< placement type: DROCE_FLUSH_GLOBAL | _PERSISTENT */
	uint8_t feth_sel;	/**< selectivity: DROCE_FLUSH_RANGE or _MR */
	uint32_t deth_qkey;
	uint32_t deth_sqpn;	/**< 24 bits */
	uint32_t xrceth_srqn;	/**< 24 bits: the XRC SRQ a request is for */
	/* payload (without pad and ICRC) */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t icrc;		/**< parser: as found on the wire */
	/** parser: a FLUSH whose ICRC is Linux rxe's, not the spec's
	 *  (droce_icrc_rxe_flush) */
	uint8_t icrc_rxe_flush;
	/* offsets into the frame, filled by the parser */
	uint16_t l3_off;
	uint16_t bth_off;
};

/** Parser options. */
struct droce_parse_opts {
	uint32_t path_mtu;	/**< max payload bytes; 0 = 4096 */
	uint32_t transports;	/**< bitmask of 1u << (transport >> 5); 0 = any */
	uint8_t skip_icrc;	/**< don't verify ICRC (a NIC checked it) */
	uint8_t verify_udp_csum; /**< verify a non-zero UDP checksum */
};

/**
 * Parse and validate a frame.
 *
 * Never reads outside [frame, frame + len). Bytes after the IP datagram
 * (Ethernet padding, a trailer) are ignored: the IP length says where the
 * datagram ends. Checks run structure first, then the ICRC, then the
 * length rules of the opcode: the two verdicts marked (*) in enum
 * droce_wire_err come only for a packet whose ICRC checked good, with pkt
 * filled in as on success, so that a responder can answer them (Invalid
 * Request NAK) where any other verdict is a silent drop.
 *
 * @param frame  the frame, starting at the Ethernet destination address
 * @param len    its length, without the Ethernet FCS
 * @param opts   options, NULL for defaults
 * @param pkt    filled on success (payload points into frame)
 * @return 0, or a negative enum droce_wire_err
 */
int droce_wire_parse(const uint8_t *frame, uint32_t len,
		const struct droce_parse_opts *opts, struct droce_pkt *pkt);

/**
 * Cheap classification without a full parse: if frame is Ethernet (with an
 * optional VLAN tag) / IPv4 or IPv6 / UDP to port 4791 with room for a BTH,
 * return the BTH's destination QP; otherwise -1. For demultiplexing before
 * droce_wire_parse() validates everything.
 */
int64_t droce_wire_peek_dqpn(const uint8_t *frame, uint32_t len);

/**
 * Length of the headers the builder writes for pkt (Ethernet to the end of
 * the last extension header).
 */
uint32_t droce_wire_hdr_len(const struct droce_pkt *pkt);

/**
 * Length of the whole frame for pkt: headers, payload, pad, ICRC.
 */
uint32_t droce_wire_frame_len(const struct droce_pkt *pkt);

/**
 * Build a complete frame from pkt: headers, payload (copied from
 * pkt->payload), pad, IPv4 header checksum, UDP checksum (for IPv4: 0
 * when pkt->udp_csum is 0, as rxe sends, computed otherwise; for IPv6
 * always computed), ICRC.
 *
 * @return frame length, or -ENOSPC if cap is too small, -EINVAL if the
 *   opcode is unknown.
 */
int droce_wire_build(const struct droce_pkt *pkt, uint8_t *buf, uint32_t cap);

/**
 * Build only the headers (droce_wire_hdr_len(pkt) bytes) for a frame whose
 * payload of pkt->payload_len bytes the caller places right after them
 * (or in another segment). Lengths and PadCnt are derived from
 * pkt->payload_len. Finish with droce_wire_finish().
 *
 * @return header length, or negative errno as droce_wire_build().
 */
int droce_wire_build_hdr(const struct droce_pkt *pkt, uint8_t *buf, uint32_t cap);

/**
 * The Ethernet, IP and UDP headers every frame of one connection shares,
 * laid out once: a frame's headers are then a copy, its lengths, and its
 * BTH and extension headers (droce_wire_build_hdr_tmpl).
 */
struct droce_hdr_tmpl {
	uint8_t bytes[DROCE_ETH_HLEN + DROCE_VLAN_HLEN + DROCE_IPV6_HLEN +
		DROCE_UDP_HLEN];
	uint8_t l3_off;		/**< where the IP header starts */
	uint8_t bth_off;	/**< where the BTH starts */
	uint8_t ip_ver;
	uint16_t pkey;
	uint32_t ip_csum_base;	/**< IPv4: header sum without total length */
};

/** Bytes of a frame a receive template covers (Ethernet, IPv4, UDP, the
 *  BTH to the QPN's first byte), and the shortest frame it can match. */
#define DROCE_RX_TMPL_LEN 48
#define DROCE_RX_FAST_MIN_LEN (DROCE_ETH_HLEN + DROCE_IPV4_HLEN + \
	DROCE_UDP_HLEN + DROCE_BTH_LEN + DROCE_ICRC_LEN)

/**
 * What every frame from a connected QP's peer has in its first bytes (IPv4,
 * no VLAN): the device's MAC, IPv4 without options and not a fragment, UDP
 * to port 4791, the two addresses, and in the BTH the QP's transport, TVer
 * 0, the default P_Key and the QP's number. want holds the bytes, mask the
 * bits that are fixed; the rest (lengths, IP id, TTL, TOS, sums, UDP source
 * port, opcode, PSN) varies from frame to frame.
 */
struct droce_rx_tmpl {
	uint8_t want[DROCE_RX_TMPL_LEN] __attribute__((aligned(16)));
	uint8_t mask[DROCE_RX_TMPL_LEN] __attribute__((aligned(16)));
};

/**
 * The receive template of a QP numbered qpn of transport (DROCE_TRANSPORT_RC,
 * _UC or _UD) on a port with MAC mac, whose own GID is local and its peer's
 * peer (UD: NULL, frames from anyone). For droce_wire_parse_rx_fast()
 * (wire_parse.h).
 *
 * @return 0, or -ENOTSUP where a GID is not IPv4 (the frames are IPv6: the
 *         full parse takes them), the transport is none of these, or a peer
 *         is given for UD or none for the others.
 */
int droce_wire_rx_tmpl_init(struct droce_rx_tmpl *t, const uint8_t mac[6],
		const uint8_t local[16], const uint8_t peer[16], uint32_t qpn,
		uint8_t transport);

/**
 * Lay out the template from pkt's Ethernet, IP, UDP fields and P_Key.
 * @return 0, or -EINVAL for an IP version other than 4 or 6.
 */
int droce_wire_tmpl_init(struct droce_hdr_tmpl *t, const struct droce_pkt *pkt);

/**
 * droce_wire_build_hdr() for a frame of t's connection. Of pkt it reads
 * only opcode, se, ackreq, dqpn, psn, payload_len and the extension
 * headers the opcode carries (MigReq, TVer, FECN, BECN and reserved bits
 * are sent as 0). buf needs DROCE_MAX_HDR_LEN bytes of room: the copy may
 * write past the headers, where the payload goes next.
 *
 * @return header length, or -EINVAL if the opcode is unknown.
 */
int droce_wire_build_hdr_tmpl(const struct droce_hdr_tmpl *t,
		const struct droce_pkt *pkt, uint8_t *buf);

/**
 * Finish a frame laid out contiguously by droce_wire_build_hdr() plus
 * payload: write the pad bytes (zero) and the ICRC after the payload, and
 * for IPv6 the UDP checksum. buf must have room for the pad and the ICRC.
 *
 * @return total frame length.
 */
uint32_t droce_wire_finish(uint8_t *buf, uint32_t hdr_len, uint32_t payload_len);

/**
 * The same for a frame whose payload lies elsewhere (zero-copy transmit):
 * begin with the headers in buf (IPv4 only: an IPv6 frame's UDP checksum
 * covers the payload), continue with droce_icrc_update() over each piece
 * of payload, end by writing the pad bytes and the ICRC, which follow the
 * payload on the wire, to tail (8 bytes). Returns the bytes in tail.
 */
uint32_t droce_wire_icrc_begin(const uint8_t *buf, uint32_t hdr_len);
uint32_t droce_wire_icrc_end(uint32_t state, uint32_t payload_len,
		uint8_t *tail);

/* ---- ICRC ---- */

/** CRC-32 (reflected Ethernet polynomial) update, no pre/post inversion. */
uint32_t droce_crc32_update(uint32_t crc, const void *data, size_t len);

/**
 * The same with the portable engine (slicing-by-8) whatever engine
 * droce_crc32_update uses: a reference for tests and benchmarks.
 */
uint32_t droce_crc32_update_sw(uint32_t crc, const void *data, size_t len);

/**
 * Pick the engine droce_crc32_update uses: "table", "pclmul" or "vpclmul"
 * (AVX-512). For tests and benchmarks; the default is the fastest the CPU
 * has.
 *
 * @return 0, or -ENOTSUP when the CPU lacks it (or the name is unknown).
 */
int droce_crc32_set_engine(const char *name);

/** The engine droce_crc32_update uses: "vpclmul", "pclmul" or "table". */
const char *droce_crc32_engine(void);

/**
 * ICRC over the masked headers, starting at the IP header (l3 points to it),
 * ending after the BTH's extension headers. Returns an intermediate CRC
 * state to continue with droce_icrc_update() over payload and pad.
 */
uint32_t droce_icrc_hdr(const uint8_t *l3, uint32_t hdr_len_from_l3);

/** Continue an ICRC over payload/pad bytes. */
static inline uint32_t
droce_icrc_update(uint32_t state, const void *data, size_t len)
{
	return droce_crc32_update(state, data, len);
}

/** Final ICRC value, as stored little-endian on the wire. */
static inline uint32_t
droce_icrc_final(uint32_t state)
{
	return ~state;
}

/**
 * ICRC of a whole frame: l3 points to the IP header, len is the number of
 * bytes from there up to (not including) the ICRC.
 */
uint32_t droce_icrc(const uint8_t *l3, uint32_t len);

/** The engine droce_icrc_v4() calls: the CRC engine's, straight. */
extern uint32_t (*droce_icrc_v4_engine)(const uint8_t *l3, uint32_t len);

/**
 * droce_icrc() of an IPv4 packet whose IP, UDP and BTH headers are all
 * there (len >= 40): one call into the CRC engine, without the IP
 * version's and the engine's tests, for the per-frame paths.
 */
static inline uint32_t
droce_icrc_v4(const uint8_t *l3, uint32_t len)
{
	return droce_icrc_v4_engine(l3, len);
}

/**
 * The ICRC Linux rxe (kernel 6.2 and later) puts on a FLUSH: its opcode
 * table gives FLUSH no payload offset, so after the masked headers its
 * CRC runs over the BTH, FETH and RETH a second time, as they are. Two
 * rxe accept each other's FLUSHes, nobody else does. The parser accepts a
 * FLUSH with either ICRC (pkt->icrc_rxe_flush says which); a sender that
 * talks to rxe stores this one instead (DROCE_RXE_FLUSH_ICRC). Arguments
 * as droce_icrc().
 */
uint32_t droce_icrc_rxe_flush(const uint8_t *l3, uint32_t len);

/**
 * Rewrite the ICRC of a whole FLUSH frame (Ethernet to ICRC, len bytes, as
 * droce_wire_build or _finish left it) the way Linux rxe computes it.
 */
void droce_wire_set_icrc_rxe_flush(uint8_t *frame, uint32_t len);

/**
 * What a congested switch does to a RoCEv2 frame (Ethernet, optional
 * VLAN, IPv4 or IPv6, UDP to 4791), len bytes: the ECN field to CE, the
 * IPv4 header checksum updated (the ICRC leaves the field out). With
 * ect_only, a Not-ECT frame is left alone, as RFC 3168 has it; without,
 * any RoCEv2 frame is marked (fault injection standing in for a switch
 * a peer's Not-ECT frames would meet). 1 if marked.
 */
int droce_wire_mark_ce(uint8_t *frame, uint32_t len, int ect_only);

/* ---- PSN arithmetic (24 bits) ---- */

#define DROCE_PSN_MASK 0xffffffu

/** a + n, modulo 2^24. */
static inline uint32_t
droce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & DROCE_PSN_MASK;
}

/**
 * Signed distance a - b in 24-bit arithmetic: > 0 when a is ahead of b,
 * < 0 when behind, in [-2^23, 2^23).
 */
static inline int32_t
droce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* ---- MTU ---- */

/** IB MTU enum (1..5) to bytes (256..4096); 0 for an invalid enum. */
static inline uint32_t
droce_mtu_to_bytes(unsigned int mtu_enum)
{
	return (mtu_enum >= 1 && mtu_enum <= 5) ? 128u << mtu_enum : 0;
}

/** Bytes to the largest IB MTU enum not above them; 0 if below 256. */
static inline unsigned int
droce_bytes_to_mtu(uint32_t bytes)
{
	unsigned int e;

	for (e = 5; e >= 1; e--)
		if ((128u << e) <= bytes)
			return e;
	return 0;
}

/**
 * Path MTU enum for an Ethernet MTU, as rxe derives it: the largest IB MTU
 * not above mtu - 80 (1500 -> 1024).
 */
static inline unsigned int
droce_eth_mtu_to_path_mtu(uint32_t eth_mtu)
{
	return eth_mtu > 80 ? droce_bytes_to_mtu(eth_mtu - 80) : 0;
}

/* ---- addressing ---- */

/** Fill a GID with the IPv4-mapped form of ip (host order). */
void droce_gid_from_ipv4(uint8_t gid[16], uint32_t ip);

/** True if gid is IPv4-mapped; then *ip (host order) is set. */
bool droce_gid_is_ipv4(const uint8_t gid[16], uint32_t *ip);

/**
 * True if gid names a multicast group on RoCEv2: IPv4-mapped
 * 224.0.0.0/4 or IPv6 ff00::/8.
 */
bool droce_gid_is_mcast(const uint8_t gid[16]);

/**
 * The Ethernet group address frames to multicast GID gid go to: 01:00:5e
 * and the low 23 bits of an IPv4 group (RFC 1112), 33:33 and the low 32
 * bits of an IPv6 one (RFC 2464).
 * @return 0, or -EINVAL when gid is not multicast.
 */
int droce_gid_mcast_mac(const uint8_t gid[16], uint8_t mac[6]);

/** DestQP of every frame to a multicast group (IBTA: QP 0xFFFFFF). */
#define DROCE_MCAST_QPN 0xffffffu

/** Link-local GID fe80::EUI-64(mac), as rxe's GID 0. */
void droce_gid_link_local(uint8_t gid[16], const uint8_t mac[6]);

/** rxe's UDP source port for a QP at creation (QPN hash). */
uint16_t droce_udp_sport_qpn(uint32_t qpn);

/** rxe's UDP source port for a connected pair with flow label fl (0 = derive). */
uint16_t droce_udp_sport_flow(uint32_t lqpn, uint32_t rqpn, uint32_t fl);

/** AETH credit code (0..31) to credits; -1 for 31 (invalid). */
int droce_aeth_credits(unsigned int code);

/** RNR timer code (0..31) to microseconds (IBTA table 45). */
uint32_t droce_rnr_timer_us(unsigned int code);

/** Local ACK timeout exponent t to nanoseconds (4.096 us * 2^t; 0 = none). */
static inline uint64_t
droce_ack_timeout_ns(unsigned int t)
{
	return t == 0 ? 0 : 4096ull << (t > 31 ? 31 : t);
}

/** AETH syndromes. */
#define DROCE_AETH_ACK(credit)	((uint8_t)((credit) & 0x1f))
#define DROCE_AETH_ACK_NOCREDIT	0x1f
#define DROCE_AETH_RNR(timer)	((uint8_t)(0x20 | ((timer) & 0x1f)))
#define DROCE_AETH_NAK_PSN_SEQ	0x60
#define DROCE_AETH_NAK_INV_REQ	0x61
#define DROCE_AETH_NAK_REM_ACC	0x62
#define DROCE_AETH_NAK_REM_OP	0x63
#define DROCE_AETH_NAK_INV_RD	0x64
/** The kind of AETH syndrome (its bits 6:5; 2 is reserved). */
enum droce_aeth_type {
	DROCE_AETH_TYPE_ACK = 0,
	DROCE_AETH_TYPE_RNR = 1,
	DROCE_AETH_TYPE_NAK = 3,
};
#define DROCE_AETH_TYPE(s)	(((s) >> 5) & 3)	/**< droce_aeth_type */
/** The syndrome's value: an ACK's credit code, an RNR NAK's timer code. */
#define DROCE_AETH_VALUE(s)	((s) & 0x1f)

#ifdef __cplusplus
}
#endif

#endif /* DROCE_WIRE_H */

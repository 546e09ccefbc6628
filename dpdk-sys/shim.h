/* The few things bindgen cannot expose: macros and thread-locals. */
#ifndef DCIR_SHIM_H
#define DCIR_SHIM_H
#include <stdint.h>

/* rte_errno is a per-lcore thread-local. */
int dcir_errno(void);
/* The lcore id of the calling thread (RTE_PER_LCORE(_lcore_id)). */
unsigned dcir_lcore_id(void);

/* Function-like macros turned into constants. */
extern const uint64_t DCIR_ETH_RSS_IP;
extern const uint64_t DCIR_ETH_RSS_UDP;
extern const uint64_t DCIR_ETH_RSS_TCP;
extern const uint64_t DCIR_ETH_MQ_RX_RSS;
extern const uint64_t DCIR_ETH_TX_OFFLOAD_MULTI_SEGS;
extern const uint64_t DCIR_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
extern const uint32_t DCIR_PKTMBUF_HEADROOM;
extern const uint32_t DCIR_MBUF_DEFAULT_BUF_SIZE;
extern const int DCIR_SOCKET_ID_ANY;
extern const uint32_t DCIR_MAX_ETHPORTS;

#endif

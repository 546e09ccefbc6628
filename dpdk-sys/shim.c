#include <rte_config.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include "shim.h"

int dcir_errno(void) { return rte_errno; }
unsigned dcir_lcore_id(void) { return rte_lcore_id(); }

const uint64_t DCIR_ETH_RSS_IP = RTE_ETH_RSS_IP;
const uint64_t DCIR_ETH_RSS_UDP = RTE_ETH_RSS_UDP;
const uint64_t DCIR_ETH_RSS_TCP = RTE_ETH_RSS_TCP;
const uint64_t DCIR_ETH_MQ_RX_RSS = RTE_ETH_MQ_RX_RSS;
const uint64_t DCIR_ETH_TX_OFFLOAD_MULTI_SEGS = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
const uint64_t DCIR_ETH_TX_OFFLOAD_MBUF_FAST_FREE = RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
const uint32_t DCIR_PKTMBUF_HEADROOM = RTE_PKTMBUF_HEADROOM;
const uint32_t DCIR_MBUF_DEFAULT_BUF_SIZE = RTE_MBUF_DEFAULT_BUF_SIZE;
const int DCIR_SOCKET_ID_ANY = SOCKET_ID_ANY;
const uint32_t DCIR_MAX_ETHPORTS = RTE_MAX_ETHPORTS;

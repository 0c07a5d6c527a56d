// Proves @dpdk links and its EAL starts without hugepages, PCI or a NIC.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>

TEST(DpdkSmokeTest, EalInitsWithoutHugepagesAndAllocatesAnMbuf) {
  std::array<char*, 8> argv = {
      const_cast<char*>("dpdk_smoke_test"),
      const_cast<char*>("--no-huge"),
      const_cast<char*>("-m"),
      const_cast<char*>("64"),
      const_cast<char*>("--no-pci"),
      const_cast<char*>("--no-shconf"),
      const_cast<char*>("--no-telemetry"),
      const_cast<char*>("--log-level=lib.eal:error"),
  };
  ASSERT_EQ(rte_eal_init(static_cast<int>(argv.size()), argv.data()),
            static_cast<int>(argv.size()) - 1);
  EXPECT_GE(rte_lcore_count(), 1u);

  rte_mempool* pool =
      rte_pktmbuf_pool_create("smoke", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  rte_mbuf* mbuf = rte_pktmbuf_alloc(pool);
  ASSERT_NE(mbuf, nullptr);
  EXPECT_EQ(rte_pktmbuf_headroom(mbuf), RTE_PKTMBUF_HEADROOM);
  rte_pktmbuf_free(mbuf);
  rte_mempool_free(pool);
  EXPECT_EQ(rte_eal_cleanup(), 0);
}

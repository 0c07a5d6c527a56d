// Proves @ipsec_mb links and its multi-buffer manager initializes and runs a job.
#include <gtest/gtest.h>
#include <intel-ipsec-mb.h>

#include <array>

TEST(IpsecMbSmokeTest, InitMbMgrAutoPicksAnArchitectureAndEncryptsABlock) {
  IMB_MGR* manager = alloc_mb_mgr(0);
  ASSERT_NE(manager, nullptr);
  IMB_ARCH arch = IMB_ARCH_NONE;
  init_mb_mgr_auto(manager, &arch);
  EXPECT_EQ(imb_get_errno(manager), 0) << imb_get_strerror(imb_get_errno(manager));
  EXPECT_NE(arch, IMB_ARCH_NONE);

  // FIPS-197 Appendix C.1: AES-128 of 00112233..ff under key 000102..0f.
  alignas(16) std::array<uint8_t, 16> key{};
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i);
  alignas(16) std::array<uint32_t, 4 * 15> enc_keys{};
  alignas(16) std::array<uint32_t, 4 * 15> dec_keys{};
  IMB_AES_KEYEXP_128(manager, key.data(), enc_keys.data(), dec_keys.data());
  std::array<uint8_t, 16> block{};
  for (int i = 0; i < 16; ++i) block[i] = static_cast<uint8_t>(0x11 * i);
  std::array<uint8_t, 16> out{};
  IMB_JOB* job = IMB_GET_NEXT_JOB(manager);
  job->cipher_direction = IMB_DIR_ENCRYPT;
  job->chain_order = IMB_ORDER_CIPHER_HASH;
  job->cipher_mode = IMB_CIPHER_ECB;
  job->hash_alg = IMB_AUTH_NULL;
  job->enc_keys = enc_keys.data();
  job->dec_keys = dec_keys.data();
  job->key_len_in_bytes = IMB_KEY_128_BYTES;
  job->src = block.data();
  job->dst = out.data();
  job->cipher_start_src_offset_in_bytes = 0;
  job->msg_len_to_cipher_in_bytes = block.size();
  job->iv_len_in_bytes = 0;
  job = IMB_SUBMIT_JOB(manager);
  if (job == nullptr) job = IMB_FLUSH_JOB(manager);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->status, IMB_STATUS_COMPLETED);
  const std::array<uint8_t, 16> expected = {0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30,
                                            0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a};
  EXPECT_EQ(out, expected);
  free_mb_mgr(manager);
}

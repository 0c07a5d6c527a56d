// Replays fuzz inputs through LLVMFuzzerTestOneInput without libFuzzer, so the
// seed corpora run in every `bazel test` and crashes reproduce under gcc.
// Arguments are files or directories (searched one level deep).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool replay_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "corpus_replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<uint8_t> input((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\nReplays each input once.\n", argv[0]);
    return argc < 2 ? 2 : 0;
  }
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (!entry.is_regular_file()) continue;
        if (!replay_file(entry.path())) return 1;
        ++replayed;
      }
    } else {
      if (!replay_file(arg)) return 1;
      ++replayed;
    }
  }
  std::printf("corpus_replay: %zu inputs replayed without a crash\n", replayed);
  return replayed == 0 ? 1 : 0;
}

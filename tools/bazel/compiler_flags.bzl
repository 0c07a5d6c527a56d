"""Compiler flags and target macros used by every dpquic target.

All of our code builds as C++20 with warnings as errors. The CPU baseline is
x86-64-v2 (SSE4.2, POPCNT): what DPDK's headers need, and what every x86 server
built in the last decade has. ipsec-mb picks AVX2/AVX-512 at run time itself.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

DPQUIC_COPTS = [
    "-std=c++20",
    "-march=x86-64-v2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wnon-virtual-dtor",
    "-Wimplicit-fallthrough",
    "-Wno-missing-field-initializers",
]

# Test sources are most of what CI compiles, and compiling them twice (normal
# and sanitized) is most of CI's time. They need line tables for backtraces,
# not full debug info, which costs a quarter of their compile time.
_TEST_COPTS = ["-g1"]

def _with_copts(kwargs):
    kwargs["copts"] = DPQUIC_COPTS + kwargs.get("copts", [])
    if native.package_name().startswith("tests/"):
        kwargs["copts"] = kwargs["copts"] + _TEST_COPTS
    return kwargs

def dpquic_cc_library(**kwargs):
    # Static only: no shared object beside the archive. Binaries and tests
    # link our libraries statically, so nothing would load it.
    kwargs.setdefault("linkstatic", True)
    cc_library(**_with_copts(kwargs))

def dpquic_cc_binary(**kwargs):
    cc_binary(**_with_copts(kwargs))

def dpquic_cc_test(**kwargs):
    # Tests link statically, as binaries do: Bazel's default for a test links
    # its libraries as shared objects, from PIC objects no binary uses.
    kwargs.setdefault("linkstatic", True)
    cc_test(**_with_copts(kwargs))

def dpquic_fuzz_target(name, srcs, corpus, deps = [], **kwargs):
    """A libFuzzer target plus a test that replays its seed corpus.

    `name` is a binary: under --config=fuzz it links libFuzzer's main and fuzzes
    for real (`bazel run --config=fuzz //tests/fuzz:name -- ARGS`); in a normal
    build it replays the files named on its command line. `name_corpus_test`
    replays `corpus` in every `bazel test`.
    """
    dpquic_cc_library(
        name = name + "_lib",
        srcs = srcs,
        deps = deps,
        testonly = True,
        alwayslink = True,
    )
    dpquic_cc_binary(
        name = name,
        testonly = True,
        deps = [name + "_lib"] + select({
            "//tools/bazel:fuzzing": [],
            "//conditions:default": ["//tests/fuzz:corpus_replay_main"],
        }),
        linkopts = select({
            "//tools/bazel:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        **kwargs
    )
    native.filegroup(
        name = name + "_corpus",
        srcs = corpus,
        testonly = True,
    )
    dpquic_cc_test(
        name = name + "_corpus_test",
        deps = [name + "_lib", "//tests/fuzz:corpus_replay_main"],
        data = [name + "_corpus"],
        args = ["$(locations %s_corpus)" % name],
        size = "small",
    )

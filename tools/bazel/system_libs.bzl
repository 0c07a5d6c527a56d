"""System libraries from Debian packages as Bazel cc_library targets.

Where a package ships a pkg-config file its flags are used; otherwise the
Debian paths are named here. Header directories outside /usr/include are
linked into the repository so Bazel passes them as -isystem and tracks them.
"""

load(":debian_repos.bzl", "missing_package")

_BUILD_TEMPLATE = """\
load("@rules_cc//cc:defs.bzl", "cc_library")

package(default_visibility = {visibility})

cc_library(
    name = "{name}",
    hdrs = glob({hdr_globs}, allow_empty = True),
    includes = {includes},
    defines = {defines},
    linkopts = {linkopts},
)
"""

def _pkg_config(repository_ctx, module, flag):
    result = repository_ctx.execute(["pkg-config", flag, module])
    if result.return_code != 0:
        missing_package(repository_ctx.attr.package, "pkg-config module '%s'" % module)
    return [flag for flag in result.stdout.strip().split(" ") if flag]

def _system_library_impl(repository_ctx):
    attr = repository_ctx.attr
    for required in attr.required_files:
        if not repository_ctx.path(required).exists:
            missing_package(attr.package, required)
    if attr.pkg_config and not repository_ctx.which("pkg-config"):
        missing_package("pkg-config", "the pkg-config tool")

    include_dirs = list(attr.include_dirs)
    defines = list(attr.defines)
    linkopts = []
    if attr.pkg_config:
        for flag in _pkg_config(repository_ctx, attr.pkg_config, "--cflags"):
            if flag.startswith("-I"):
                include_dirs.append(flag[2:])
            elif flag.startswith("-D"):
                defines.append(flag[2:])
            # -include and -march are left to our own flags: our sources include
            # what they use, and the target CPU is chosen once in compiler_flags.bzl.
        linkopts = _pkg_config(repository_ctx, attr.pkg_config, "--libs")
    linkopts += attr.linkopts

    includes = []
    hdr_globs = []
    for index, directory in enumerate(include_dirs):
        # Only directories this package owns are linked; shared roots such as
        # /usr/include are already on the compiler's system path.
        if not directory.startswith(tuple(attr.owned_include_prefixes)):
            continue
        if not repository_ctx.path(directory).exists:
            continue
        link = "include%d" % index
        repository_ctx.symlink(directory, link)
        includes.append(link)
        hdr_globs.append(link + "/**/*.h")

    repository_ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % repository_ctx.name)
    repository_ctx.file("BUILD.bazel", _BUILD_TEMPLATE.format(
        name = repository_ctx.name,
        hdr_globs = repr(hdr_globs),
        includes = repr(includes),
        defines = repr(defines),
        linkopts = repr(linkopts),
        visibility = repr(attr.visibility_to),
    ))

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        "package": attr.string(mandatory = True, doc = "Debian package to name when missing."),
        "pkg_config": attr.string(doc = "pkg-config module, when the package ships one."),
        "required_files": attr.string_list(doc = "Files whose absence means the package is missing."),
        "include_dirs": attr.string_list(doc = "Header directories, when there is no pkg-config."),
        "owned_include_prefixes": attr.string_list(
            default = ["/nonexistent"],
            doc = "Include directories under these prefixes are linked and exported.",
        ),
        "defines": attr.string_list(doc = "Preprocessor defines for every dependent."),
        "linkopts": attr.string_list(doc = "Extra link flags."),
        "visibility_to": attr.string_list(
            default = ["//visibility:public"],
            doc = "Who may depend on the library (keeps I/O libraries out of //quic).",
        ),
    },
    local = True,
    environ = ["PKG_CONFIG_PATH"],
)

_ANDROID_LIB_DIR = "/usr/lib/x86_64-linux-gnu/android"
_MULTIARCH_LIB_DIR = "/usr/lib/x86_64-linux-gnu"

def dpquic_system_libraries():
    """Declares every system library the project builds against."""
    system_library(
        name = "dpdk",
        package = "libdpdk-dev",
        pkg_config = "libdpdk",
        required_files = ["/usr/include/dpdk/rte_eal.h"],
        owned_include_prefixes = ["/usr/include/dpdk", "/usr/include/x86_64-linux-gnu/dpdk"],
        # The sans-IO core must never reach the NIC.
        visibility_to = ["@//dataplane:__subpackages__", "@//tools:__subpackages__", "@//tests:__subpackages__"],
    )
    system_library(
        name = "ipsec_mb",
        package = "libipsec-mb-dev",
        required_files = ["/usr/include/intel-ipsec-mb.h", _MULTIARCH_LIB_DIR + "/libIPSec_MB.so"],
        # Drops ipsec-mb's pre-0.53 macro names (SHA1, MD5, AES...), which
        # would otherwise rename BoringSSL's functions in any file that
        # includes both.
        defines = ["NO_COMPAT_IMB_API_053"],
        linkopts = [_MULTIARCH_LIB_DIR + "/libIPSec_MB.so"],
    )
    system_library(
        name = "boringssl",
        package = "android-libboringssl-dev",
        required_files = [
            "/usr/include/android/openssl/ssl.h",
            _ANDROID_LIB_DIR + "/libssl.so",
            _ANDROID_LIB_DIR + "/libcrypto.so",
        ],
        include_dirs = ["/usr/include/android"],
        owned_include_prefixes = ["/usr/include/android"],
        # Linked by full path so OpenSSL 3 (pulled in by some DPDK PMDs) can
        # never be picked instead; rpath because the directory is private.
        linkopts = [
            _ANDROID_LIB_DIR + "/libssl.so",
            _ANDROID_LIB_DIR + "/libcrypto.so",
            "-Wl,-rpath," + _ANDROID_LIB_DIR,
        ],
    )
    system_library(
        name = "mimalloc",
        package = "libmimalloc2.0",
        required_files = [_MULTIARCH_LIB_DIR + "/libmimalloc.so.2"],
        # Only the runtime library: it replaces malloc for the whole process
        # (BoringSSL's allocations too) by being linked, no header is used.
        # --no-as-needed: nothing references it by name, and it must stay.
        linkopts = [
            "-Wl,--push-state,--no-as-needed",
            _MULTIARCH_LIB_DIR + "/libmimalloc.so.2",
            "-Wl,--pop-state",
        ],
        visibility_to = ["@//dataplane:__subpackages__", "@//tools:__subpackages__"],
    )
    system_library(
        name = "nghttp3",
        package = "libnghttp3-dev",
        pkg_config = "libnghttp3",
        required_files = ["/usr/include/nghttp3/nghttp3.h"],
    )
    system_library(
        name = "microhttpd",
        package = "libmicrohttpd-dev",
        pkg_config = "libmicrohttpd",
        required_files = ["/usr/include/microhttpd.h"],
        # The metrics endpoint's HTTP server, off the packet cores.
        visibility_to = ["@//dataplane:__subpackages__", "@//tests:__subpackages__"],
    )
    system_library(
        name = "gtest",
        package = "libgtest-dev",
        required_files = ["/usr/include/gtest/gtest.h", _MULTIARCH_LIB_DIR + "/libgtest.a"],
        linkopts = ["-lgmock", "-lgtest", "-pthread"],
    )
    system_library(
        name = "gtest_main",
        package = "libgtest-dev",
        required_files = [_MULTIARCH_LIB_DIR + "/libgtest_main.a"],
        linkopts = ["-lgtest_main", "-lgmock", "-lgtest", "-pthread"],
    )
    system_library(
        name = "benchmark",
        package = "libbenchmark-dev",
        pkg_config = "benchmark",
        required_files = ["/usr/include/benchmark/benchmark.h"],
    )

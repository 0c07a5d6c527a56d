"""help_test: binaries built, linked and started with --help."""

def help_test(name, binaries, **kwargs):
    """An sh_test running each of `binaries` with --help (tests/util/help_test.sh).

    `bazel test` builds only what tests need (.bazelrc: --build_tests_only), so
    a binary no other test runs is built and checked here.
    """
    native.sh_test(
        name = name,
        size = "small",
        srcs = ["//tests/util:help_test.sh"],
        args = ["$(location %s)" % binary for binary in binaries],
        data = binaries,
        **kwargs
    )

//! Workload generators size their tables before they allocate them (`workloads::memory`): a
//! spec too large for the limit is one error naming the workload, the parameter and the bytes
//! (issue 88: `chase:pages=1g` aborted the process asking for 8 GiB). One test function: the
//! limit is process-wide.

use tlblab_trace::workloads::{build, memory, parse_spec};

fn built(spec: &str) -> Result<(), String> {
    let (name, params) = parse_spec(spec)?;
    build(&name, &params, 1).map(|_| ())
}

#[test]
fn given_a_small_limit_when_a_spec_needs_more_then_it_is_refused_naming_the_parameter_and_the_bytes(
) {
    memory::set_budget(64 << 20);
    let cases = [
        ("chase:pages=1g", "pages=1073741824", "8.0 GiB"),
        ("host_migrate:pages=1g", "pages=1073741824", "8.0 GiB"),
        ("liblinear:instances=4g", "instances=4294967296", "16.0 GiB"),
        ("canneal:elements=2g", "elements=2147483648", "8.0 GiB"),
        (
            "hash_join:buckets=1g",
            "buckets=1073741824, inner_rows=1048576",
            "4.0 GiB",
        ),
        (
            "graph500_bfs:scale=26",
            "scale=26, edge_factor=16",
            "(19595788288 bytes)",
        ),
        (
            "gapbs_bc:scale=26,edge_factor=1000000000000",
            "scale=26, edge_factor=1000000000000",
            "EiB",
        ),
        (
            "graph500_list:scale=26",
            "scale=26, edge_factor=16",
            "(18522046464 bytes)",
        ),
        (
            "lockdown_mix:rt=1,scale=1000000",
            "scale=1000000, rt=1",
            "TiB",
        ),
    ];
    for (spec, param, size) in cases {
        let e = built(spec).expect_err(spec);
        let name = spec.split(':').next().unwrap();
        assert!(
            e.starts_with(&format!("workload '{name}': {param} needs ")),
            "{spec}: {e}"
        );
        assert!(e.contains(size), "{spec}: {e}");
        assert!(
            e.contains("more than the 64.0 MiB of the limit set in this process")
                && e.contains(memory::ENV),
            "{spec}: {e}"
        );
    }
    // What fits is built as before: the defaults of every catalog entry fit in 64 MiB but the
    // graph ones at their default scale; small graphs fit.
    for spec in [
        "chase",
        "chase:pages=1m",
        "graph500_bfs:scale=10",
        "gapbs_bc:scale=10",
        "graph500_list:scale=10",
        "lockdown_mix:rt=1",
        "hash_join",
        "liblinear",
        "canneal",
        "host_migrate",
    ] {
        built(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
    memory::set_budget(0);
}

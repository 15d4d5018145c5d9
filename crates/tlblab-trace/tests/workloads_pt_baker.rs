//! Behaviour of seed 001's (PT-Baker's) workloads: canneal, liblinear and graph500's seq-list
//! BFS, their footprints (Table 5.2) and references step by step.

use std::collections::{BTreeMap, HashSet};
use tlblab_trace::record::{Event, Record};
use tlblab_trace::source::RecordSource;
use tlblab_trace::workloads::{build, Params};
use tlblab_types::AccessKind;

mod common;
use common::{accesses, all, params};

/// Building `workload` with one parameter set to a bad value fails with `message`.
fn refused(workload: &str, param: (&str, u64), message: &str) {
    match build(workload, &params(&[param]), 1) {
        Ok(_) => panic!("{workload} with {param:?} was built"),
        Err(e) => assert!(e.contains(message), "{e}"),
    }
}

/// The regions a workload announces, by name: (start, len).
fn region_map(name: &str, p: &Params) -> BTreeMap<String, (u64, u64)> {
    let s = build(name, p, 1).unwrap();
    let names = s.region_names();
    let mut out = BTreeMap::new();
    let mut s = build(name, p, 1).unwrap();
    let mut recs = Vec::new();
    s.fill(&mut recs, 64).unwrap();
    for r in recs {
        if let Record::Event(Event::Region { region, start, len }) = r {
            out.insert(names[region as usize].clone(), (start.0, len));
        }
    }
    out
}

/// Canneal's footprint (seed Table 5.2: 20.6 GB in all, 5.1 GB the element array PT-Baker
/// sweeps, for 6e7 elements), checked at 2^20 elements and scaled: 336 bytes an element, 88 of
/// them the element.
#[test]
fn canneal_footprint_follows_the_netlist_structures() {
    let n = 1u64 << 20;
    let r = region_map("canneal", &params(&[("elements", n)]));
    assert_eq!(r["elements"].1, n * 88);
    assert_eq!(r["fanin_lists"].1, n * 80);
    assert_eq!(r["fanout_lists"].1, n * 80);
    assert_eq!(r["locations"].1, n * 8);
    assert_eq!(r["name_map"].1, n * 80);
    let total: u64 = r.values().map(|v| v.1).sum();
    assert_eq!(total, n * 336);
    // At 6e7: 20.2 GB against Table 5.2's 20.6 GB; the element array 5.3 GB against 5.1 GB.
    assert!((6e7 * 336.0 / 20.6e9 - 1.0f64).abs() < 0.03);
}

/// As transparent huge pages back canneal (`thp`, the default): every region but the element
/// array is mapped with 4 KiB pages before the first access, so a machine of 2 MiB pages gives
/// large pages to the element array only; `thp=0` maps nothing (every region at the machine's
/// size).
#[test]
fn canneal_keeps_its_heap_on_small_pages_as_thp_does() {
    let mappings = |thp: u64| -> Vec<(u64, u64, u8)> {
        let p = params(&[("elements", 4096), ("swaps", 10), ("thp", thp)]);
        let (r, _) = all("canneal", &p, 1);
        let first = r
            .iter()
            .position(|r| matches!(r, Record::Access(_)))
            .unwrap();
        r[..first]
            .iter()
            .filter_map(|r| match r {
                Record::Event(Event::Mmap {
                    start,
                    len,
                    page_shift,
                    ..
                }) => Some((start.0, *len, *page_shift)),
                _ => None,
            })
            .collect()
    };
    let r = region_map("canneal", &params(&[("elements", 4096)]));
    let mut heap: Vec<(u64, u64, u8)> = ["fanin_lists", "fanout_lists", "locations", "name_map"]
        .iter()
        .map(|n| (r[*n].0, r[*n].1, 12))
        .collect();
    heap.sort_unstable();
    let mut mapped = mappings(1);
    mapped.sort_unstable();
    assert_eq!(mapped, heap);
    assert!(mapped
        .iter()
        .all(|&(s, l, _)| s + l <= r["elements"].0 || s >= r["elements"].0 + r["elements"].1));
    assert!(mappings(0).is_empty());
}

/// Each step: the two elements' present_loc and cells, then per element its two lists'
/// begin/end and per neighbour (2 x degree) the list entry, its present_loc and its cell; an
/// accepted move stores both present_loc.
#[test]
fn canneal_steps_read_every_neighbours_location() {
    let p = params(&[
        ("elements", 1000),
        ("degree", 3),
        ("swaps", 50),
        ("temp_steps", 2),
    ]);
    let (r, names) = all("canneal", &p, 5);
    assert_eq!(names[0], "elements");
    let acc = accesses(&r);
    let loads = acc.iter().filter(|a| a.1 == AccessKind::Load).count();
    let stores = acc.iter().filter(|a| a.1 == AccessKind::Store).count();
    // 4 + 2 x (2 x 2 + 2 x 3 x 3) = 48 loads a step, 100 steps.
    assert_eq!(loads, 100 * 48);
    // The marks: the two elements' present_loc, their cells, per element the three levels of
    // its neighbours' chains (entries, present_loc, cells), the move's decision: 9 a step,
    // whatever the degree; then the end of the marked phase.
    let marks = |begin: bool| {
        r.iter()
            .filter(
                |x| matches!(x, Record::Event(Event::Independent { begin: b, .. }) if *b == begin),
            )
            .count()
    };
    assert_eq!((marks(true), marks(false)), (100 * 9, 1));
    // Level by level: between two marks of an element's chains, one kind of load only (all
    // entries, all present_loc or all cells), so the 2 x 3 = 6 chains' loads of a level
    // follow each other.
    let per_level: Vec<usize> = r
        .split(|x| matches!(x, Record::Event(Event::Independent { .. })))
        .map(|run| {
            run.iter()
                .filter(|x| matches!(x, Record::Access(_)))
                .count()
        })
        .collect();
    assert!(
        per_level.iter().filter(|&&n| n == 6).count() >= 100 * 2 * 2,
        "{per_level:?}"
    );
    assert_eq!(stores % 2, 0);
    assert!(
        stores > 0 && stores < 200,
        "{stores} stores: some moves are accepted, not all"
    );
    refused(
        "canneal",
        ("degree", 0),
        "canneal: degree must be in 1..=64 (got 0)",
    );
    refused(
        "canneal",
        ("elements", 1),
        "canneal: elements must be in 2..=2^31 (got 1)",
    );
}

/// HIGGS (seed §5.2: 11e6 instances x 28 features): x_space 29 nodes of 16 bytes a row (5.1
/// GB), 5.5 GB in all (Table 5.2); checked at 2^16 rows and scaled.
/// canneal's netlist reading (netlist.cpp): the annealer's regions; per line a search of the
/// element's name and of each fan-in's (three loads a node of the path, as deep as a balanced
/// tree of the names read so far), a name's first appearance inserting a node at the heap's
/// end; per fan-in the two vectors' push_back; nothing marked independent; the last line's
/// searches as deep as a tree of every name (nearly all read by then).
#[test]
fn canneal_read_searches_the_name_map_and_grows_the_vectors() {
    let (n, degree) = (4096u64, 6u64);
    let p = params(&[("elements", n), ("degree", degree)]);
    assert_eq!(
        region_map("canneal_read", &p),
        region_map("canneal", &params(&[("elements", n), ("degree", degree)]))
    );
    let (r, names) = all("canneal_read", &p, 3);
    let map = region_map("canneal_read", &p)["name_map"];
    let acc = accesses(&r);
    let in_map = |a: &(u32, AccessKind, u64)| a.2 >= map.0 && a.2 < map.0 + map.1;
    let map_loads = acc
        .iter()
        .filter(|a| in_map(a) && a.1 == AccessKind::Load)
        .count() as u64;
    let map_stores = acc
        .iter()
        .filter(|a| in_map(a) && a.1 == AccessKind::Store)
        .count() as u64;
    // n(1 + degree) searches, each at most 13 deep (4096 names), three loads a node; a new
    // name (each of the n, once) searched twice and written: 4 stores and its parent's link.
    let searches = n * (1 + degree);
    assert!(
        map_loads > searches * 3 * 8 && map_loads < (searches + n) * 3 * 13,
        "{map_loads}"
    );
    assert!(
        map_stores > n / 2 * 5 && map_stores <= n * 5 + degree * n,
        "{map_stores}"
    );
    // Per fan-in: end and capacity of two vectors loaded.
    let elems = region_map("canneal_read", &p)["elements"];
    let elem_loads = acc
        .iter()
        .filter(|a| a.1 == AccessKind::Load && a.2 >= elems.0 && a.2 < elems.0 + elems.1)
        .count() as u64;
    assert_eq!(elem_loads, n * degree * 4);
    assert!(!r
        .iter()
        .any(|x| matches!(x, Record::Event(Event::Independent { .. }))));
    assert_eq!(names[0], "elements");
    refused(
        "canneal_read",
        ("degree", 0),
        "canneal_read: degree must be in 1..=64 (got 0)",
    );
}

#[test]
fn liblinear_footprint_and_one_pass() {
    let l = 1u64 << 16;
    let r = region_map("liblinear", &params(&[("instances", l)]));
    assert_eq!(r["x_space"].1, l * 29 * 16);
    let per_row: f64 = r.values().map(|v| v.1 as f64).sum::<f64>() / l as f64;
    assert!(
        (11e6 * per_row / 5.5e9 - 1.0).abs() < 0.05,
        "{per_row} bytes a row"
    );
    // One iteration over 10 rows of 3 features: the shuffle (4 a row), then per row 3 + 3 x 3
    // + 1 (dot) + 3 + 3 x 4 + 1 (axpy) = 29 accesses; every row read twice.
    let p = params(&[("instances", 10), ("features", 3), ("iterations", 1)]);
    let (recs, _) = all("liblinear", &p, 2);
    let acc = accesses(&recs);
    assert_eq!(acc.len(), 10 * 4 + 10 * 29);
    let x = region_map("liblinear", &p)["x_space"];
    let mut rows: BTreeMap<u64, usize> = BTreeMap::new();
    for a in acc.iter().filter(|a| a.2 >= x.0 && a.2 < x.0 + x.1) {
        *rows.entry((a.2 - x.0) / 64).or_default() += 1;
    }
    assert_eq!(rows.len(), 10);
    assert!(rows.values().all(|&c| c == 2 * (3 * 2 + 1)));
    refused(
        "liblinear",
        ("features", 0),
        "liblinear: features must be in 1..=4096 (got 0)",
    );
}

/// graph500_list (graph500 v2 seq-list): the regions are the program's allocations with its
/// element sizes; the construction makes 2 stores + 2 loads per edge, 2 stores and 1 load per
/// vertex, and 12 more references per edge that is not a self-loop; a search stores every
/// `bfs_tree` entry once (the root's twice), then per reached vertex loads `vlist` and `head`,
/// per chain entry loads `IJ`, `bfs_tree` and `next`, and per newly reached vertex stores
/// `bfs_tree` and `vlist`; it reaches exactly the root's component, each vertex once, and walks
/// each vertex's chain from its last edge back to its first.
#[test]
fn graph500_list_makes_seq_lists_references() {
    use tlblab_trace::workloads::graph500_list::list_graph;
    let (scale, ef, seed) = (7u32, 4u64, 5u64);
    let p: Params = params(&[("scale", scale as u64), ("edge_factor", ef), ("roots", 1)]);
    let (r, names) = all("graph500_list", &p, seed);
    assert_eq!(names, ["edges", "head", "bfs_tree", "vlist"]);
    let g = list_graph(scale, ef, seed);
    let (m, nv) = (g.ij.len() as u64, g.nv);
    assert_eq!(m, ef << scale);
    let regions: Vec<(u64, u64)> = r
        .iter()
        .filter_map(|x| match x {
            Record::Event(Event::Region { start, len, .. }) => Some((start.0, *len)),
            _ => None,
        })
        .collect();
    let page = |b: u64| b.div_ceil(4096) * 4096;
    let want = [m * 16, (2 * nv + 2 * m) * 8, (1 << scale) * 8, nv * 8];
    for (i, (&(_, len), bytes)) in regions.iter().zip(want).enumerate() {
        assert_eq!(len, page(bytes), "region {}", names[i]);
    }
    let (ij, head, tree, vlist) = (regions[0].0, regions[1].0, regions[2].0, regions[3].0);
    let next = head + 2 * nv * 8;
    let acc = accesses(&r);
    for a in &acc {
        assert!(
            regions.iter().any(|&(s, l)| a.2 >= s && a.2 + 8 <= s + l),
            "access {a:?} outside the regions"
        );
    }
    let self_loops = g.ij.iter().filter(|e| e.0 == e.1).count() as u64;
    let construction = 2 * m + 2 * m + 2 * nv + 2 * m + 12 * (m - self_loops) + nv;
    // make_graph's stores, in edge order.
    for k in 0..m as usize {
        assert_eq!(acc[2 * k], (0, AccessKind::Store, ij + 16 * k as u64));
        assert_eq!(
            acc[2 * k + 1],
            (0, AccessKind::Store, ij + 16 * k as u64 + 8)
        );
    }
    let search = &acc[construction as usize..];
    // The set-up: bfs_tree[root] twice, vlist[0], then every other entry of bfs_tree.
    let root = (search[0].2 - tree) / 8;
    assert_eq!(search[1], search[0]);
    assert_eq!(search[2], (0, AccessKind::Store, vlist));
    let setup = 3 + (nv - 1) as usize;
    let reset: HashSet<u64> = search[3..setup].iter().map(|a| a.2).collect();
    assert_eq!(reset.len() as u64, nv - 1);
    assert!(!reset.contains(&search[0].2));
    // The root's component, by an independent search over the edge list.
    let mut adj = vec![Vec::new(); nv as usize];
    for &(i, j) in g.ij.iter().filter(|e| e.0 != e.1) {
        adj[i as usize].push(j);
        adj[j as usize].push(i);
    }
    let mut seen = vec![false; nv as usize];
    let mut stack = vec![root as u32];
    seen[root as usize] = true;
    let mut comp_edges = 0u64;
    while let Some(v) = stack.pop() {
        comp_edges += adj[v as usize].len() as u64;
        for &w in &adj[v as usize] {
            if !seen[w as usize] {
                seen[w as usize] = true;
                stack.push(w);
            }
        }
    }
    let reached = seen.iter().filter(|&&s| s).count() as u64;
    let bfs = &search[setup..];
    let in_range = |a: &(u32, AccessKind, u64), s: u64, l: u64| a.2 >= s && a.2 < s + l;
    let count = |kind: AccessKind, s: u64, l: u64| {
        bfs.iter()
            .filter(|a| a.1 == kind && in_range(a, s, l))
            .count() as u64
    };
    assert_eq!(count(AccessKind::Load, vlist, nv * 8), reached);
    assert_eq!(count(AccessKind::Load, head, nv * 8), reached);
    assert_eq!(count(AccessKind::Load, ij, m * 16), comp_edges);
    assert_eq!(count(AccessKind::Load, tree, nv * 8), comp_edges);
    assert_eq!(count(AccessKind::Load, next, 2 * m * 8), comp_edges);
    assert_eq!(count(AccessKind::Store, vlist, nv * 8), reached - 1);
    assert_eq!(count(AccessKind::Store, tree, nv * 8), reached - 1);
    assert_eq!(
        bfs.len() as u64,
        2 * reached + 3 * comp_edges + 2 * (reached - 1)
    );
    // Every reached vertex is stored into the tree once, and it is the component.
    let stored: Vec<u64> = bfs
        .iter()
        .filter(|a| a.1 == AccessKind::Store && in_range(a, tree, nv * 8))
        .map(|a| (a.2 - tree) / 8)
        .collect();
    let distinct: HashSet<u64> = stored.iter().copied().collect();
    assert_eq!(distinct.len(), stored.len());
    assert!(stored.iter().all(|&v| seen[v as usize] && v != root));
    // make_bfs_tree transcribed from seq-list.c over head/next linked as
    // create_graph_from_edgelist links them: the same references in the same order.
    let (mut hd, mut nx) = (vec![-1i64; nv as usize], vec![-1i64; 2 * m as usize]);
    for (k, &(i, j)) in g.ij.iter().enumerate() {
        if i != j {
            let t = 2 * k as i64 + 1;
            nx[t as usize] = hd[i as usize];
            hd[i as usize] = t;
            nx[t as usize - 1] = hd[j as usize];
            hd[j as usize] = t - 1;
        }
    }
    let (mut bt, mut vl) = (vec![-1i64; nv as usize], vec![root as i64]);
    bt[root as usize] = root as i64;
    let mut want = Vec::new();
    let (ld, st) = (AccessKind::Load, AccessKind::Store);
    let mut k = 0;
    while k < vl.len() {
        let parent = vl[k];
        want.push((0, ld, vlist + 8 * k as u64));
        want.push((0, ld, head + 8 * parent as u64));
        let mut p = hd[parent as usize];
        while p >= 0 {
            let (v0, v1) = g.ij[(p / 2) as usize];
            let newv = if p % 2 == 1 { v1 } else { v0 } as i64;
            want.push((0, ld, ij + 16 * (p as u64 / 2) + 8 * (p as u64 % 2)));
            want.push((0, ld, tree + 8 * newv as u64));
            if bt[newv as usize] < 0 {
                bt[newv as usize] = parent;
                want.push((0, st, tree + 8 * newv as u64));
                want.push((0, st, vlist + 8 * vl.len() as u64));
                vl.push(newv);
            }
            want.push((0, ld, next + 8 * p as u64));
            p = nx[p as usize];
        }
        k += 1;
    }
    assert_eq!(bfs[..], want[..]);
    // init=0: the same searches, without the construction.
    let mut p0 = p.clone();
    p0.insert("init".into(), 0);
    let acc0 = accesses(&all("graph500_list", &p0, seed).0);
    assert_eq!(acc0[..], search[..]);
}

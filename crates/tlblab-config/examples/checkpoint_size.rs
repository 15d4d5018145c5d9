//! Size and time of a checkpoint: `cargo run --release -p tlblab-config --example
//! checkpoint_size -- MACHINE SPEC FILE` runs SPEC on MACHINE made one core of one hardware
//! thread (the sizes in docs/checkpoints.md were measured so), saves it to FILE, loads it back, and
//! prints the references, the file's bytes and the seconds of each step.

use std::time::Instant;
use tlblab_config::checkpoint;
use tlblab_core::{RunOptions, System};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, machine, spec, file] = &args[..] else {
        return Err("usage: checkpoint_size MACHINE SPEC FILE".into());
    };
    let mut cfg = tlblab_config::load_machine(machine)?;
    cfg.cores = 1;
    cfg.threads_per_core = 1;
    let opts = RunOptions::default();
    let (name, params) = tlblab_trace::workloads::parse_spec(spec)?;
    let mut src = tlblab_trace::workloads::build(&name, &params, 0)?;
    let mut sys = System::new(cfg.clone(), opts).map_err(|e| e.0)?;
    let t = Instant::now();
    sys.run(&mut src).map_err(|e| e.0)?;
    let run_s = t.elapsed().as_secs_f64();
    let path = std::path::Path::new(file);
    let t = Instant::now();
    checkpoint::save(path, &sys, spec)?;
    let save_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let t = Instant::now();
    let restored = checkpoint::load(path, &cfg, &opts, spec)?;
    let load_s = t.elapsed().as_secs_f64();
    assert_eq!(restored.system.references(), sys.references());
    println!(
        "{{\"machine\": \"{machine}\", \"workload\": \"{spec}\", \"references\": {}, \"bytes\": {bytes}, \"run_s\": {run_s:.3}, \"save_s\": {save_s:.3}, \"load_s\": {load_s:.3}}}",
        sys.references()
    );
    Ok(())
}

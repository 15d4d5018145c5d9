//! Runs the probe from Rust and prints the report as JSON (`probe '{"quick": true}'`).
fn main() {
    let opts = std::env::args().nth(1).unwrap_or_else(|| "{}".into());
    let o: tlblab_probe::probe::ProbeOptions = serde_json::from_str(&opts).expect("options JSON");
    match tlblab_probe::probe::run(&o) {
        Ok(r) => println!("{}", serde_json::to_string_pretty(&r).unwrap()),
        Err(e) => eprintln!("error: {e}"),
    }
}

//! Generates the parser from `src/grammar.lalrpop` into `OUT_DIR`.

fn main() {
    println!("cargo:rerun-if-changed=src/grammar.lalrpop");
    if let Err(e) = lalrpop::process_src() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

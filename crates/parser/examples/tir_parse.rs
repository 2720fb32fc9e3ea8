//! Parses the `.tir` files named on the command line and prints each tree as
//! s-expressions, or its errors as `file:line:col: message`.
//! With `-e CODE`, parses CODE instead.

fn show(name: &str, src: &str) {
    match tirc_parser::parse(src) {
        Ok(m) => print!("{}", tirc_parser::sexpr::module(&m)),
        Err(errors) => {
            for line in tirc_parser::render_errors(src, &errors).lines() {
                println!("{name}:{line}");
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-e" && i + 1 < args.len() {
            show("<code>", &args[i + 1].replace("\\n", "\n"));
            i += 2;
        } else {
            match std::fs::read_to_string(&args[i]) {
                Ok(src) => show(&args[i], &src),
                Err(e) => eprintln!("{}: {e}", args[i]),
            }
            i += 1;
        }
    }
}

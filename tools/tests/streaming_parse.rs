//! Every `.mlir` input of the lit suite (each `// -----` piece) parses to
//! the same IR whether region bodies are parsed whole or op by op (as the
//! parser does for operations over a megabyte), with every dialect ipuc
//! registers.

use std::path::Path;

use ipuc_ir::{parse_source_with, print_op, Context, ParseOptions, PrintOptions};

fn printed(text: &str, stream_body_bytes: usize) -> Result<String, String> {
    let mut ctx = Context::new(ipuc_tools::registry::dialects());
    ctx.allow_unregistered = true;
    let parsed = parse_source_with(
        &mut ctx,
        "in.mlir",
        text,
        &ParseOptions {
            stream_body_bytes,
            ..ParseOptions::default()
        },
    )
    .map_err(|d| d.to_string())?;
    let opts = PrintOptions {
        generic: true,
        debug_info: true,
        ..PrintOptions::default()
    };
    Ok(print_op(&ctx, parsed.module, &opts))
}

fn mlir_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("lit-tests readable")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            mlir_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "mlir") {
            out.push(p);
        }
    }
}

#[test]
fn lit_inputs_parse_the_same_streamed_or_whole() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lit-tests");
    let mut files = Vec::new();
    mlir_files(&root, &mut files);
    assert!(
        files.len() > 10,
        "lit-tests not found at {}",
        root.display()
    );
    let mut pieces = 0;
    let mut parsed = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for piece in text.split("\n// -----\n") {
            pieces += 1;
            let whole = printed(piece, usize::MAX);
            let streamed = printed(piece, 0);
            match (&whole, &streamed) {
                (Ok(a), Ok(b)) => {
                    parsed += 1;
                    assert!(
                        a == b,
                        "{}: streamed parse differs:\n{a}\n---\n{b}",
                        f.display()
                    )
                }
                (Err(_), Err(_)) => {}
                _ => panic!(
                    "{}: whole {:?} vs streamed {:?}\n{piece}",
                    f.display(),
                    whole.err(),
                    streamed.err()
                ),
            }
        }
    }
    assert!(
        parsed * 2 > pieces,
        "only {parsed} of {pieces} pieces parsed"
    );
}

//! MLIR's textual pass pipeline syntax:
//! `builtin.module(func.func(canonicalize{max-iterations=4},cse),symbol-dce)`.

/// One element of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineElement {
    /// A pass with `key=value` options.
    Pass {
        name: String,
        options: Vec<(String, String)>,
    },
    /// A nested pipeline anchored on an op name (or `any`).
    Nest {
        anchor: String,
        elements: Vec<PipelineElement>,
    },
}

impl PipelineElement {
    /// Prints the element back in pipeline syntax.
    pub fn to_text(&self) -> String {
        match self {
            PipelineElement::Pass { name, options } if options.is_empty() => name.clone(),
            PipelineElement::Pass { name, options } => {
                let o: Vec<String> = options.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{name}{{{}}}", o.join(" "))
            }
            PipelineElement::Nest { anchor, elements } => {
                let inner: Vec<String> = elements.iter().map(|e| e.to_text()).collect();
                format!("{anchor}({})", inner.join(","))
            }
        }
    }
}

/// Parses a pipeline; errors carry the byte offset of the problem.
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineElement>, (usize, String)> {
    let mut p = PipelineParser {
        s: text.as_bytes(),
        i: 0,
    };
    let elems = p.list()?;
    p.ws();
    if p.i != p.s.len() {
        return Err((
            p.i,
            format!("unexpected '{}' in pass pipeline", p.s[p.i] as char),
        ));
    }
    Ok(elems)
}

struct PipelineParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl PipelineParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn ident(&mut self) -> Result<String, (usize, String)> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric()
                || matches!(self.s[self.i], b'_' | b'-' | b'.'))
        {
            self.i += 1;
        }
        if start == self.i {
            return Err((start, "expected a pass or op name".into()));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
    fn list(&mut self) -> Result<Vec<PipelineElement>, (usize, String)> {
        let mut out = Vec::new();
        self.ws();
        if self.i >= self.s.len() || self.s[self.i] == b')' {
            return Ok(out);
        }
        loop {
            out.push(self.element()?);
            self.ws();
            if self.i < self.s.len() && self.s[self.i] == b',' {
                self.i += 1;
                continue;
            }
            return Ok(out);
        }
    }
    fn element(&mut self) -> Result<PipelineElement, (usize, String)> {
        let name = self.ident()?;
        self.ws();
        if self.i < self.s.len() && self.s[self.i] == b'(' {
            self.i += 1;
            let elements = self.list()?;
            self.ws();
            if self.i >= self.s.len() || self.s[self.i] != b')' {
                return Err((
                    self.i,
                    format!("expected ')' to close the '{name}' pipeline"),
                ));
            }
            self.i += 1;
            return Ok(PipelineElement::Nest {
                anchor: name,
                elements,
            });
        }
        let mut options = Vec::new();
        if self.i < self.s.len() && self.s[self.i] == b'{' {
            self.i += 1;
            loop {
                self.ws();
                if self.i >= self.s.len() {
                    return Err((
                        self.i,
                        format!("expected '}}' to close the options of '{name}'"),
                    ));
                }
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    break;
                }
                let key = self.ident()?;
                self.ws();
                let value = if self.i < self.s.len() && self.s[self.i] == b'=' {
                    self.i += 1;
                    self.value()?
                } else {
                    "true".to_string()
                };
                options.push((key, value));
            }
        }
        Ok(PipelineElement::Pass { name, options })
    }
    fn value(&mut self) -> Result<String, (usize, String)> {
        self.ws();
        let start = self.i;
        if self.i < self.s.len() && (self.s[self.i] == b'"' || self.s[self.i] == b'\'') {
            let q = self.s[self.i];
            self.i += 1;
            while self.i < self.s.len() && self.s[self.i] != q {
                self.i += 1;
            }
            if self.i >= self.s.len() {
                return Err((start, "unterminated quoted option value".into()));
            }
            self.i += 1;
            return Ok(String::from_utf8_lossy(&self.s[start + 1..self.i - 1]).into_owned());
        }
        let mut depth = 0i32;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'{' | b'(' | b'[' => depth += 1,
                b'}' | b')' | b']' if depth == 0 => break,
                b'}' | b')' | b']' => depth -= 1,
                c if c.is_ascii_whitespace() && depth == 0 => break,
                _ => {}
            }
            self.i += 1;
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_pipeline_round_trips() {
        let text = "builtin.module(func.func(canonicalize{max-iterations=4},cse),symbol-dce)";
        let p = parse_pipeline(text).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].to_text(), text);
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = parse_pipeline("builtin.module(cse").unwrap_err();
        assert_eq!(e.0, 18);
        assert!(e.1.contains("expected ')'"));
    }
}

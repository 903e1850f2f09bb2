//! A small integer expression language for parameter spaces: constraints (`BM % TM == 0`),
//! derived values (`THREADS = (BM/TM)*(BN/TN)`) and launch geometry (`ceil_div(N, BN)`).
//!
//! Grammar, loosest first: `||`, `&&`, comparisons (`== != < <= > >=`), `+ -`, `* / %`,
//! unary `- !`, then numbers, identifiers, parentheses and calls to `min`, `max`, `ceil_div`.
//! Values are `i64`; comparisons and logic give 0 or 1. Division by zero is an error.

use std::collections::BTreeMap;

/// Why an expression could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// The text is not a valid expression.
    #[error("cannot parse expression '{text}': {reason} (at byte {pos})")]
    Parse {
        /// The expression.
        text: String,
        /// What went wrong.
        reason: String,
        /// Byte offset of the problem.
        pos: usize,
    },
    /// A name that is neither a parameter, a derived value nor a built-in variable.
    #[error("expression '{text}' uses unknown name '{name}'")]
    UnknownName {
        /// The expression.
        text: String,
        /// The unknown identifier.
        name: String,
    },
    /// Division or remainder by zero, or an overflow.
    #[error("expression '{text}': {reason}")]
    Arithmetic {
        /// The expression.
        text: String,
        /// What went wrong.
        reason: &'static str,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(i64),
    Var(String),
    Unary(char, Box<Node>),
    Binary(&'static str, Box<Node>, Box<Node>),
    Call(String, Vec<Node>),
}

/// A parsed expression, ready to evaluate many times.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    text: String,
    root: Node,
}

/// Names and their values for one evaluation.
pub type Env = BTreeMap<String, i64>;

const BINARY_LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["==", "!=", "<=", ">=", "<", ">"],
    &["+", "-"],
    &["*", "/", "%"],
];

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, reason: impl Into<String>) -> ExprError {
        ExprError::Parse {
            text: self.text.to_string(),
            reason: reason.into(),
            pos: self.pos,
        }
    }

    fn skip_ws(&mut self) {
        while self.text[self.pos..].starts_with(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.skip_ws();
        if self.text[self.pos..].starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    fn binary(&mut self, level: usize) -> Result<Node, ExprError> {
        if level == BINARY_LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        'outer: loop {
            self.skip_ws();
            for &op in BINARY_LEVELS[level] {
                // `<` must not swallow the first half of `<=`, nor `!` of `!=`.
                if self.text[self.pos..].starts_with(op) {
                    self.pos += op.len();
                    let rhs = self.binary(level + 1)?;
                    lhs = Node::Binary(op, Box::new(lhs), Box::new(rhs));
                    continue 'outer;
                }
            }
            return Ok(lhs);
        }
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        self.skip_ws();
        for op in ['-', '!'] {
            if self.text[self.pos..].starts_with(op) && !self.text[self.pos..].starts_with("!=") {
                self.pos += 1;
                return Ok(Node::Unary(op, Box::new(self.unary()?)));
            }
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Node, ExprError> {
        self.skip_ws();
        let rest = &self.text[self.pos..];
        if self.eat("(") {
            let inner = self.binary(0)?;
            if !self.eat(")") {
                return Err(self.err("expected ')'"));
            }
            return Ok(inner);
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(self.err(if rest.is_empty() {
                "unexpected end".to_string()
            } else {
                format!(
                    "unexpected '{}'",
                    &rest[..rest.chars().next().map_or(0, char::len_utf8)]
                )
            }));
        }
        let word = &rest[..len];
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            let v = word
                .parse::<i64>()
                .map_err(|_| self.err(format!("bad number '{word}'")))?;
            self.pos += len;
            return Ok(Node::Num(v));
        }
        self.pos += len;
        if self.eat("(") {
            let mut args = Vec::new();
            if !self.eat(")") {
                loop {
                    args.push(self.binary(0)?);
                    if self.eat(")") {
                        break;
                    }
                    if !self.eat(",") {
                        return Err(self.err("expected ',' or ')'"));
                    }
                }
            }
            let arity = match word {
                "min" | "max" | "ceil_div" => 2,
                _ => return Err(self.err(format!("unknown function '{word}'"))),
            };
            if args.len() != arity {
                return Err(self.err(format!("{word} takes {arity} arguments")));
            }
            return Ok(Node::Call(word.to_string(), args));
        }
        Ok(Node::Var(word.to_string()))
    }
}

impl Expr {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut p = Parser { text, pos: 0 };
        let root = p.binary(0)?;
        p.skip_ws();
        if p.pos != text.len() {
            return Err(p.err("unexpected trailing text"));
        }
        Ok(Expr {
            text: text.to_string(),
            root,
        })
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every identifier the expression reads.
    pub fn names(&self) -> Vec<String> {
        fn walk(n: &Node, out: &mut Vec<String>) {
            match n {
                Node::Num(_) => {}
                Node::Var(v) => out.push(v.clone()),
                Node::Unary(_, a) => walk(a, out),
                Node::Binary(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Node::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out.sort();
        out.dedup();
        out
    }

    /// Evaluates with the given names.
    pub fn eval(&self, env: &Env) -> Result<i64, ExprError> {
        self.eval_node(&self.root, env)
    }

    fn arith(&self, reason: &'static str) -> ExprError {
        ExprError::Arithmetic {
            text: self.text.clone(),
            reason,
        }
    }

    fn eval_node(&self, n: &Node, env: &Env) -> Result<i64, ExprError> {
        let overflow = || self.arith("integer overflow");
        Ok(match n {
            Node::Num(v) => *v,
            Node::Var(name) => *env.get(name).ok_or_else(|| ExprError::UnknownName {
                text: self.text.clone(),
                name: name.clone(),
            })?,
            Node::Unary(op, a) => {
                let a = self.eval_node(a, env)?;
                match op {
                    '-' => a.checked_neg().ok_or_else(overflow)?,
                    _ => i64::from(a == 0),
                }
            }
            Node::Binary(op, a, b) => {
                let a = self.eval_node(a, env)?;
                // Short-circuit so `K > 0 && N % K == 0` is safe.
                match *op {
                    "&&" if a == 0 => return Ok(0),
                    "||" if a != 0 => return Ok(1),
                    _ => {}
                }
                let b = self.eval_node(b, env)?;
                match *op {
                    "+" => a.checked_add(b).ok_or_else(overflow)?,
                    "-" => a.checked_sub(b).ok_or_else(overflow)?,
                    "*" => a.checked_mul(b).ok_or_else(overflow)?,
                    "/" | "%" if b == 0 => return Err(self.arith("division by zero")),
                    // i64::MIN / -1 overflows: checked, as values can come from a database.
                    "/" => a.checked_div(b).ok_or_else(overflow)?,
                    "%" => a.checked_rem(b).ok_or_else(overflow)?,
                    "==" => i64::from(a == b),
                    "!=" => i64::from(a != b),
                    "<" => i64::from(a < b),
                    "<=" => i64::from(a <= b),
                    ">" => i64::from(a > b),
                    ">=" => i64::from(a >= b),
                    _ => i64::from(b != 0), // && and || after the short-circuit
                }
            }
            Node::Call(f, args) => {
                let a = self.eval_node(&args[0], env)?;
                let b = self.eval_node(&args[1], env)?;
                match f.as_str() {
                    "min" => a.min(b),
                    "max" => a.max(b),
                    _ => {
                        if b <= 0 {
                            return Err(self.arith("ceil_div by a non-positive number"));
                        }
                        a.checked_add(b - 1).ok_or_else(overflow)? / b
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(text: &str, vars: &[(&str, i64)]) -> Result<i64, ExprError> {
        let env: Env = vars.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Expr::parse(text)?.eval(&env)
    }

    #[test]
    fn precedence_and_functions() {
        assert_eq!(ev("1 + 2 * 3", &[]).unwrap(), 7);
        assert_eq!(ev("(1 + 2) * 3", &[]).unwrap(), 9);
        assert_eq!(ev("-4 + 10 % 3", &[]).unwrap(), -3);
        assert_eq!(
            ev("ceil_div(N, BN)", &[("N", 1000), ("BN", 128)]).unwrap(),
            8
        );
        assert_eq!(ev("min(3, max(1, 2))", &[]).unwrap(), 2);
        assert_eq!(
            ev(
                "BM % TM == 0 && BN/TN <= 16",
                &[("BM", 64), ("TM", 8), ("BN", 128), ("TN", 8)]
            )
            .unwrap(),
            1
        );
        assert_eq!(ev("1 <= 0 || 2 >= 2", &[]).unwrap(), 1);
        assert_eq!(ev("3 != 3", &[]).unwrap(), 0);
        assert_eq!(ev("!(3 < 2)", &[]).unwrap(), 1);
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(ev("1 +", &[]), Err(ExprError::Parse { .. })));
        assert!(matches!(ev("(1", &[]), Err(ExprError::Parse { .. })));
        assert!(matches!(ev("foo(1)", &[]), Err(ExprError::Parse { .. })));
        assert!(matches!(ev("1 2", &[]), Err(ExprError::Parse { .. })));
        assert!(
            matches!(ev("X + 1", &[]), Err(ExprError::UnknownName { name, .. }) if name == "X")
        );
        assert!(matches!(
            ev("4 % 0", &[]),
            Err(ExprError::Arithmetic { .. })
        ));
        assert_eq!(ev("0 && 4 % 0", &[]).unwrap(), 0);
        for e in ["A / B", "A % B"] {
            assert!(
                matches!(
                    ev(e, &[("A", i64::MIN), ("B", -1)]),
                    Err(ExprError::Arithmetic { .. })
                ),
                "{e}"
            );
        }
        assert_eq!(
            Expr::parse("B*A + min(A, C)").unwrap().names(),
            vec!["A", "B", "C"]
        );
    }
}

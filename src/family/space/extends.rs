//! `extends = "family"` in a space file: a family that shares another's parameters, constraints,
//! derived values, launch and model states only what differs. The base is found by its family
//! name among the space files read together (one catalog), and merged before the file is
//! parsed:
//! - `name`, `revision` and `description` are the file's own (never inherited);
//! - `constraints` and `untuned_constraints` are the base's, then the file's;
//! - `[params]`, `[derived]`, `[launch]` and `[model]` are merged key by key, the file's
//!   values replacing the base's;
//! - every other key (`op`, `template`, `interface`, `math`, `arch_specific`, ...) is the
//!   file's where it gives one, else the base's.
//!
//! A base may itself extend another; a chain that comes back to a file is refused.

use super::SpaceError;
use toml::{Table, Value};

/// The keys a file never takes from its base.
const OWN: [&str; 3] = ["name", "revision", "description"];
/// The tables merged key by key.
const MERGED: [&str; 4] = ["params", "derived", "launch", "model"];

/// Each of `spaces` (`(origin, text)`, as read) with its `extends` resolved: the text of a
/// space that extends another becomes its merged TOML, after a comment naming the families it
/// was made of (that text is what the family's content checksum hashes); the others are
/// returned as given. Errors name the family and its base.
pub fn resolve_extends(spaces: Vec<(String, String)>) -> Result<Vec<(String, String)>, SpaceError> {
    let tables: Vec<(String, Option<Table>)> = spaces
        .iter()
        .map(|(origin, text)| (origin.clone(), text.parse::<Table>().ok()))
        .collect();
    let name_of = |t: &Table| t.get("name").and_then(Value::as_str).map(str::to_string);
    let mut out = Vec::with_capacity(spaces.len());
    for (i, (origin, text)) in spaces.iter().enumerate() {
        // A file that does not parse, or extends nothing, goes on as it is: the space parser
        // reports its errors.
        let Some(table) = &tables[i].1 else {
            out.push((origin.clone(), text.clone()));
            continue;
        };
        if !table.contains_key("extends") {
            out.push((origin.clone(), text.clone()));
            continue;
        }
        let mut chain = vec![i];
        let merged = merge_chain(origin, table, &tables, &name_of, &mut chain)?;
        // Family names, not paths: the same files read from the binary or a directory merge
        // to the same text, so to the same content checksum.
        let names: Vec<String> = chain
            .iter()
            .map(|&j| tables[j].1.as_ref().and_then(name_of).unwrap_or_default())
            .collect();
        let text = format!(
            "# {}: merged with what it extends\n{}",
            names.join(" extends "),
            toml::to_string(&merged).map_err(|e| SpaceError::Toml {
                origin: origin.clone(),
                message: e.to_string(),
            })?
        );
        out.push((origin.clone(), text));
    }
    Ok(out)
}

/// `table` (of the file `origin`) merged over the chain of bases it extends, found among the
/// files that parse; `chain` lists the files visited.
fn merge_chain(
    origin: &str,
    table: &Table,
    tables: &[(String, Option<Table>)],
    name_of: &dyn Fn(&Table) -> Option<String>,
    chain: &mut Vec<usize>,
) -> Result<Table, SpaceError> {
    let Some(base_name) = table.get("extends") else {
        return Ok(table.clone());
    };
    let family = name_of(table).unwrap_or_else(|| origin.to_string());
    let invalid = |message: String| SpaceError::Invalid {
        family: family.clone(),
        message,
    };
    let base_name = base_name
        .as_str()
        .ok_or_else(|| invalid("extends must be a family name, in quotes".into()))?;
    let (j, (base_origin, base)) = tables
        .iter()
        .enumerate()
        .find_map(|(j, (o, t))| {
            let t = t
                .as_ref()
                .filter(|t| name_of(t).as_deref() == Some(base_name))?;
            Some((j, (o, t)))
        })
        .ok_or_else(|| {
            invalid(format!(
                "extends '{base_name}', which no space file read with it defines: name a family \
                 of the same configs/spaces/"
            ))
        })?;
    if chain.contains(&j) {
        return Err(invalid(format!(
            "extends '{base_name}', which extends it back: a chain of extends must end in a \
             space that extends nothing"
        )));
    }
    chain.push(j);
    let mut merged = merge_chain(base_origin, base, tables, name_of, chain)?;
    for key in OWN {
        merged.remove(key);
    }
    for (key, value) in table {
        if key == "extends" {
            continue;
        }
        match (key.as_str(), merged.get_mut(key), value) {
            (
                "constraints" | "untuned_constraints",
                Some(Value::Array(base)),
                Value::Array(own),
            ) => base.extend(own.iter().cloned()),
            (k, Some(Value::Table(base)), Value::Table(own)) if MERGED.contains(&k) => {
                for (k, v) in own {
                    base.insert(k.clone(), v.clone());
                }
            }
            _ => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::space::Space;
    use crate::problem::Shape;

    const BASE: &str = r#"
name = "base"
op = "gemm"
template = "toy.cu"
revision = 4
description = "the base"
constraints = ["THREADS >= 32"]

[params]
BM = [32, 64]
TM = [1, 2]

[derived]
THREADS = "BM / TM * 16"
SMEM = "4 * BM"

[launch]
grid = ["ceil_div(N, 16)", "ceil_div(M, BM)", "1"]
block = ["THREADS", "1", "1"]
dynamic_shared_bytes = "SMEM"
"#;

    const CHILD: &str = r#"
name = "child"
extends = "base"
revision = 2
constraints = ["BM % TM == 0"]

[params]
TM = [1, 2, 4]
DEEP = [0, 1]

[derived]
SMEM = "8 * BM"
"#;

    #[test]
    fn untuned_constraints_are_the_bases_then_the_files() {
        let base = BASE.replace(
            "constraints = [\"THREADS >= 32\"]",
            "constraints = [\"THREADS >= 32\"]\nuntuned_constraints = [\"TM >= 1\"]",
        );
        let own = CHILD.replace(
            "constraints = [\"BM % TM == 0\"]",
            "constraints = [\"BM % TM == 0\"]\nuntuned_constraints = [\"BM >= 64\"]",
        );
        for (child, want) in [
            (CHILD, vec!["TM >= 1"]),
            (own.as_str(), vec!["TM >= 1", "BM >= 64"]),
        ] {
            let spaces = resolved(&[("child.toml", child), ("base.toml", &base)]).unwrap();
            let texts: Vec<&str> = spaces[0].untuned.iter().map(|c| c.text()).collect();
            assert_eq!(texts, want);
        }
    }

    fn resolved(files: &[(&str, &str)]) -> Result<Vec<Space>, SpaceError> {
        let spaces = files
            .iter()
            .map(|(o, t)| (o.to_string(), t.to_string()))
            .collect();
        resolve_extends(spaces)?
            .iter()
            .map(|(o, t)| Space::from_toml_str(t, o))
            .collect()
    }

    #[test]
    fn a_space_takes_its_bases_keys_and_merges_constraints_params_and_derived() {
        let spaces = resolved(&[("child.toml", CHILD), ("base.toml", BASE)]).unwrap();
        let (child, base) = (&spaces[0], &spaces[1]);
        assert_eq!((child.name.as_str(), child.revision), ("child", 2));
        // Own keys: never inherited (no description given: empty).
        assert_eq!(child.description, "");
        assert_eq!(child.template, "toy.cu");
        // Parameters merged key by key, the child's values replacing the base's.
        let params: Vec<(&str, Vec<i64>)> = child
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        assert_eq!(
            params,
            [
                ("BM", vec![32, 64]),
                ("DEEP", vec![0, 1]),
                ("TM", vec![1, 2, 4])
            ]
        );
        // The base's constraints, then the child's.
        let texts: Vec<&str> = child.constraints.iter().map(|c| c.text()).collect();
        assert_eq!(texts, ["THREADS >= 32", "BM % TM == 0"]);
        // SMEM replaced, THREADS inherited: the launch reads the child's value.
        let shape = Shape::mnk(64, 64, 64);
        let limits = crate::gpu::Limits::for_arch(90).unwrap();
        let cfg = |s: &Space| s.prune(shape, &limits).unwrap().valid[0].clone();
        assert_eq!(
            child
                .launch(&cfg(child), shape, &limits)
                .unwrap()
                .dynamic_shared_bytes,
            8 * 32
        );
        assert_eq!(
            base.launch(&cfg(base), shape, &limits)
                .unwrap()
                .dynamic_shared_bytes,
            4 * 32
        );
        // The merged text names what it was made of, so the content checksum covers both.
        assert!(
            child.source.starts_with("# child extends base:"),
            "{}",
            child.source
        );
        assert_eq!(base.source, BASE);
    }

    #[test]
    fn unknown_bases_cycles_and_unresolved_extends_are_refused_with_the_family() {
        let e = resolved(&[("child.toml", CHILD)]).unwrap_err().to_string();
        assert!(e.contains("'child'") && e.contains("extends 'base'"), "{e}");
        let loop_a = CHILD.replace("extends = \"base\"", "extends = \"other\"");
        let loop_b = BASE.replace("name = \"base\"", "name = \"other\"\nextends = \"child\"");
        let e = resolved(&[("a.toml", &loop_a), ("b.toml", &loop_b)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("extends it back"), "{e}");
        // Parsed alone, a space that extends another says how to read it.
        let e = Space::from_toml_str(CHILD, "child.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("extends 'base'") && e.contains("catalog"), "{e}");
    }
}

// Draws `evaluate --random N --seed S --forms all`'s gemm problems for a GPU offline (the same
// exclusion: shapes the database measured on it) and prints the first K batched ones as a suite.
// A binary crate of its own with `autotune = { path = "<repo>", default-features = false }`:
//   draw results/tuning.toml "NVIDIA H200" 3136 400 20   (batched-3136.toml)
use autotune::db::Database;
use autotune::tuning::workload::{random_problems_in, Forms};
use autotune::Op;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (db, gpu, seed, n, k) = (&a[1], &a[2], a[3].parse::<u64>().unwrap(), a[4].parse().unwrap(), a[5].parse().unwrap());
    let db = Database::load(std::path::Path::new(db)).unwrap();
    let ex = |s: &autotune::problem::Shape| db.measured(gpu, Op::Gemm, *s);
    let p = random_problems_in(Op::Gemm, Forms::All, n, seed, &ex).unwrap();
    let b: Vec<_> = p.iter().filter(|p| p.shape.form.batch > 1).take(k).collect();
    println!("op = \"gemm\"\nshapes = [");
    for x in b { println!("    \"{}\",", x.shape.label(Op::Gemm)); }
    println!("]");
}

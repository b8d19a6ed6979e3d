fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let known = vec!["json".to_string(), "ndjson".to_string()];
    match sluice_config::parse(&path, &text, sluice_config::Context { deserializers: Some(&known) }) {
        Ok(c) => println!("{c:#?}"),
        Err(e) => println!("{e}"),
    }
}

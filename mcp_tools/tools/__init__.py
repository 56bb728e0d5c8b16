"""What a tool is and how it runs: the catalog, registered callables, schemas, executors."""

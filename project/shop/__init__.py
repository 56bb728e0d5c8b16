"""The demo shop: customers, products and orders for the demo tools to work on."""

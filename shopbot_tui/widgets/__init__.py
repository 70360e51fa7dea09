"""Widgets of the ShopBot terminal app."""

// C# tools for examples/mixed.json: public static methods marked [Description] become tools
// (tether_clr.clr.discover_functions). Compiled from source into a cache, never committed as a DLL:
//   python -m tether_clr.cli.demo --print-assembly   (builds it, prints the DLL's absolute path)
using System;
using System.ComponentModel;

namespace Tether.Examples
{
    public static class Inventory
    {
        [Description("How many items of a product are in stock")]
        public static int Stock([Description("The product code")] string product)
        {
            return product == "widget" ? 12 : 0;
        }

        [Description("Reserve items of a product; fails when the stock is short")]
        public static string Reserve(string product, int quantity)
        {
            int stock = Stock(product);
            if (quantity > stock)
                throw new InvalidOperationException("only " + stock + " " + product + " in stock, " + quantity + " requested");
            return "reserved " + quantity + " " + product;
        }
    }
}

/**
 * Vocabulary of the synthetic catalog: WebShop's five categories, product types (the
 * scraping queries) with Amazon-style category paths, title nouns, option groups and
 * price ranges, and attribute phrases of the kind WebShop's instructions use, each
 * tagged by where the instruction template puts it (`pre`: before the product type,
 * `with`: after "with", `for`: after "for").
 *
 * @module
 */

/** An option group: its name and the values a product may offer (in page order). */
export interface OptionGroup {
  name: string;
  values: readonly string[];
}

/** A product type: WebShop's `query` with what products of that type look like. */
export interface ProductType {
  query: string;
  product_category: string;
  nouns: readonly string[];
  options: readonly OptionGroup[];
  price: readonly [number, number];
}

/** A category: its product types and attribute phrases by instruction slot. */
export interface CategoryVocab {
  category: string;
  types: readonly ProductType[];
  attributes: { pre: readonly string[]; with: readonly string[]; for: readonly string[] };
}

const words = (s: string): string[] => s.split(",").map((x) => x.trim());

const APPAREL_SIZES = words("x-small, small, medium, large, x-large, xx-large, 3x-large");
const APPAREL_COLORS = words(
  "black, white, navy blue, red, light blue, pink, khaki, gray, army green, wine red, beige, purple",
);
const MEN_SHOE_SIZES = words("7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 12, 13");
const WOMEN_SHOE_SIZES = words("5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 10");
const SHOE_COLORS = words("black, white, grey, navy, brown, black white, tan, olive");
const FURNITURE_COLORS = words("black, white, walnut, espresso, rustic brown, white oak, gray");

/** The five categories of WebShop's data. */
export const CATEGORIES: readonly CategoryVocab[] = [
  {
    category: "fashion",
    types: [
      {
        query: "women's dresses",
        product_category: "Clothing, Shoes & Jewelry › Women › Clothing › Dresses › Casual",
        nouns: words("Dress, Maxi Dress, Midi Dress, Sundress, Wrap Dress"),
        options: [{ name: "size", values: APPAREL_SIZES }, {
          name: "color",
          values: APPAREL_COLORS,
        }],
        price: [15, 60],
      },
      {
        query: "men's t-shirts",
        product_category: "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts",
        nouns: words("T-Shirt, Crew Neck Tee, Graphic Tee, Pocket Tee"),
        options: [{ name: "size", values: APPAREL_SIZES }, {
          name: "color",
          values: APPAREL_COLORS,
        }],
        price: [8, 30],
      },
      {
        query: "men's fashion sneakers",
        product_category: "Clothing, Shoes & Jewelry › Men › Shoes › Fashion Sneakers",
        nouns: words("Sneakers, Running Shoes, Walking Shoes, Casual Shoes"),
        options: [{ name: "size", values: MEN_SHOE_SIZES }, {
          name: "color",
          values: SHOE_COLORS,
        }],
        price: [30, 120],
      },
      {
        query: "women's sandals",
        product_category: "Clothing, Shoes & Jewelry › Women › Shoes › Sandals › Flat Sandals",
        nouns: words("Sandals, Slide Sandals, Flip Flops, Platform Sandals"),
        options: [{ name: "size", values: WOMEN_SHOE_SIZES }, {
          name: "color",
          values: SHOE_COLORS,
        }],
        price: [15, 60],
      },
      {
        query: "women's fashion hoodies & sweatshirts",
        product_category:
          "Clothing, Shoes & Jewelry › Women › Clothing › Fashion Hoodies & Sweatshirts",
        nouns: words("Hoodie, Sweatshirt, Pullover, Zip Up Hoodie"),
        options: [{ name: "size", values: APPAREL_SIZES }, {
          name: "color",
          values: APPAREL_COLORS,
        }],
        price: [20, 55],
      },
      {
        query: "men's jeans",
        product_category: "Clothing, Shoes & Jewelry › Men › Clothing › Jeans",
        nouns: words("Jeans, Denim Jeans, Straight Leg Jeans, Carpenter Jeans"),
        options: [
          { name: "size", values: words("30w x 30l, 32w x 30l, 32w x 32l, 34w x 32l, 36w x 32l") },
          { name: "color", values: words("dark blue, light blue, black, indigo, stone gray") },
        ],
        price: [25, 70],
      },
    ],
    attributes: {
      pre: words(
        "machine wash, hand wash, slim fit, loose fit, relaxed fit, classic fit, quick drying, light weight, non slip, wash cold, moisture wicking",
      ),
      with: words(
        "polyester spandex, cotton spandex, elastic waist, short sleeve, long sleeve, button closure, rubber sole, lace closure, memory foam, drawstring closure, high waist, arch support",
      ),
      for: words("daily wear, gym workout, teen girls, everyday wear, dry clean, tumble dry"),
    },
  },
  {
    category: "beauty",
    types: [
      {
        query: "shampoo & conditioner",
        product_category: "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Sets",
        nouns: words("Shampoo and Conditioner Set, Shampoo, Conditioner, Hair Wash"),
        options: [{
          name: "size",
          values: words("8 fl oz (pack of 1), 16 fl oz (pack of 1), 8 fl oz (pack of 2)"),
        }],
        price: [10, 40],
      },
      {
        query: "lips makeup",
        product_category: "Beauty & Personal Care › Makeup › Lips › Lipstick",
        nouns: words("Lipstick, Liquid Lipstick, Lip Gloss, Lip Stain"),
        options: [{
          name: "color",
          values: words("ruby red, nude pink, berry, coral, mauve, plum, cherry"),
        }],
        price: [6, 25],
      },
      {
        query: "face moisturizers",
        product_category: "Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers",
        nouns: words("Face Moisturizer, Day Cream, Night Cream, Face Lotion"),
        options: [{ name: "size", values: words("1.7 ounce, 2.5 ounce, 3.4 ounce") }],
        price: [10, 50],
      },
      {
        query: "nail polish",
        product_category:
          "Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
        nouns: words("Nail Polish, Gel Nail Polish Set, Nail Lacquer"),
        options: [{
          name: "color",
          values: words("classic red, baby pink, nude, glitter silver, deep purple, white"),
        }],
        price: [5, 25],
      },
      {
        query: "men's fragrance",
        product_category: "Beauty & Personal Care › Fragrance › Men's › Eau de Toilette",
        nouns: words("Eau de Toilette, Cologne, Eau de Parfum, Body Spray"),
        options: [{ name: "size", values: words("1.7 fl oz, 3.4 fl oz, 6.7 fl oz") }],
        price: [20, 90],
      },
    ],
    attributes: {
      pre: words(
        "sulfate free, paraben free, cruelty free, long lasting, easy apply, travel size, non toxic, alcohol free, fragrance free, easy use, high quality",
      ),
      with: words(
        "tea tree, coconut oil, hyaluronic acid, argan oil, natural ingredients, vitamin c, shea butter, essential oils, aloe vera, seed oil",
      ),
      for: words(
        "damaged hair, hair growth, dry skin, sensitive skin, fine lines, dark circles, nail art",
      ),
    },
  },
  {
    category: "electronics",
    types: [
      {
        query: "hdmi cables",
        product_category:
          "Electronics › Accessories & Supplies › Audio & Video Accessories › Cables › HDMI Cables",
        nouns: words("HDMI Cable, HDMI 2.1 Cable, Braided HDMI Cord"),
        options: [{ name: "size", values: words("3 feet, 6 feet, 10 feet, 15 feet, 25 feet") }],
        price: [6, 30],
      },
      {
        query: "bluetooth headsets",
        product_category: "Cell Phones & Accessories › Accessories › Single Ear Bluetooth Headsets",
        nouns: words("Bluetooth Headset, Wireless Earpiece, Bluetooth Earbud"),
        options: [{ name: "color", values: words("black, silver, blue, rose gold") }],
        price: [15, 80],
      },
      {
        query: "phone cases",
        product_category: "Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
        nouns: words("Phone Case, Protective Case, Slim Case, Wallet Case"),
        options: [
          { name: "style", values: words("iphone 13, iphone 13 pro, iphone 14, galaxy s22") },
          { name: "color", values: words("black, clear, navy blue, pink, green") },
        ],
        price: [8, 25],
      },
      {
        query: "power banks",
        product_category:
          "Cell Phones & Accessories › Chargers & Power Adapters › Portable Power Banks",
        nouns: words("Power Bank, Portable Charger, Battery Pack"),
        options: [
          { name: "size", values: words("5000mah, 10000mah, 20000mah, 26800mah") },
          { name: "color", values: words("black, white, blue") },
        ],
        price: [15, 50],
      },
      {
        query: "security cameras",
        product_category:
          "Electronics › Camera & Photo › Video Surveillance › Surveillance Cameras › Dome Cameras",
        nouns: words("Security Camera, WiFi Camera, Indoor Camera, Outdoor Camera"),
        options: [{ name: "style", values: words("1 pack, 2 pack, 4 pack") }],
        price: [25, 150],
      },
    ],
    attributes: {
      pre: words(
        "high speed, gold plated, plug play, hands free, quick release, dual band, easy install, noise cancelling, water resistant, fast charging, high definition",
      ),
      with: words(
        "usb port, stereo sound, optical zoom, aluminum alloy, carrying case, motion detection, night vision, led indicator, built in microphone",
      ),
      for: words(
        "wireless charging, 4g lte, home theater, video conferencing, home security, car travel",
      ),
    },
  },
  {
    category: "garden",
    types: [
      {
        query: "sofa tables",
        product_category:
          "Home & Kitchen › Furniture › Living Room Furniture › Tables › Sofa & Console Tables",
        nouns: words("Console Table, Sofa Table, Entryway Table, Hallway Table"),
        options: [{ name: "color", values: FURNITURE_COLORS }],
        price: [60, 300],
      },
      {
        query: "throw blankets",
        product_category: "Home & Kitchen › Bedding › Blankets & Throws › Throws",
        nouns: words("Throw Blanket, Fleece Blanket, Sherpa Throw, Knit Throw"),
        options: [
          { name: "size", values: words("50x60 inch, 60x80 inch, twin, queen, king") },
          { name: "color", values: words("gray, cream, navy, blush pink, sage green, brown") },
        ],
        price: [15, 60],
      },
      {
        query: "bed frames",
        product_category:
          "Home & Kitchen › Furniture › Bedroom Furniture › Beds, Frames & Bases › Beds",
        nouns: words("Bed Frame, Platform Bed, Metal Bed Frame, Upholstered Bed"),
        options: [{ name: "size", values: words("twin, full, queen, king") }],
        price: [90, 400],
      },
      {
        query: "pendant lights",
        product_category:
          "Tools & Home Improvement › Lighting & Ceiling Fans › Ceiling Lights › Pendant Lights",
        nouns: words("Pendant Light, Chandelier, Hanging Light Fixture, Island Light"),
        options: [{ name: "color", values: words("black, brushed nickel, gold, bronze, white") }],
        price: [30, 200],
      },
      {
        query: "desks",
        product_category: "Home & Kitchen › Furniture › Home Office Furniture › Home Office Desks",
        nouns: words("Computer Desk, Writing Desk, Standing Desk, Office Desk"),
        options: [
          { name: "color", values: FURNITURE_COLORS },
          { name: "size", values: words("40 inch, 47 inch, 55 inch, 63 inch") },
        ],
        price: [60, 350],
      },
    ],
    attributes: {
      pre: words(
        "space saving, easy assemble, height adjustable, heavy duty, super soft, machine washable, easy clean, assembly required, high density, mid century",
      ),
      with: words(
        "solid wood, engineered wood, metal legs, storage space, wood frame, bronze finish, box spring, steel frame, glass shade, storage shelf",
      ),
      for: words("living room, dining room, bedroom, home office, kids room, guest room"),
    },
  },
  {
    category: "grocery",
    types: [
      {
        query: "breakfast foods",
        product_category: "Grocery & Gourmet Food › Breakfast Foods › Cereals › Granola",
        nouns: words("Granola, Breakfast Cereal, Oatmeal, Muesli"),
        options: [
          { name: "flavor", values: words("honey almond, chocolate, maple pecan, vanilla") },
          {
            name: "size",
            values: words("12 ounce (pack of 1), 12 ounce (pack of 3), 24 ounce (pack of 2)"),
          },
        ],
        price: [5, 30],
      },
      {
        query: "coffee",
        product_category: "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee",
        nouns: words("Ground Coffee, Whole Bean Coffee, Coffee Pods, Cold Brew Coffee"),
        options: [
          { name: "flavor", values: words("medium roast, dark roast, french vanilla, hazelnut") },
          { name: "size", values: words("12 ounce, 2 pound, 80 count") },
        ],
        price: [8, 40],
      },
      {
        query: "snack nuts",
        product_category: "Grocery & Gourmet Food › Snack Foods › Nuts & Seeds › Mixed Nuts",
        nouns: words("Mixed Nuts, Roasted Almonds, Cashews, Pistachios"),
        options: [
          { name: "flavor", values: words("sea salt, honey roasted, unsalted, smoked") },
          { name: "size", values: words("16 ounce, 2 pound, 1.5 ounce (pack of 12)") },
        ],
        price: [6, 35],
      },
      {
        query: "herbal tea",
        product_category: "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Herbal",
        nouns: words("Herbal Tea, Tea Bags, Loose Leaf Tea, Wellness Tea"),
        options: [
          { name: "flavor", values: words("chamomile, rooibos, ginger, hibiscus, lemon") },
          { name: "size", values: words("20 count (pack of 6), 40 count, 100 count") },
        ],
        price: [5, 25],
      },
      {
        query: "protein bars",
        product_category: "Grocery & Gourmet Food › Snack Foods › Bars › Protein Bars",
        nouns: words("Protein Bars, Snack Bars, Energy Bars"),
        options: [
          {
            name: "flavor",
            values: words("chocolate peanut butter, cookies and cream, birthday cake, mint"),
          },
          { name: "size", values: words("12 count, 24 count") },
        ],
        price: [15, 40],
      },
    ],
    attributes: {
      pre: words(
        "gluten free, non gmo, certified organic, sugar free, low sugar, dairy free, plant based, keto friendly, high protein, low calorie, kosher certified, shelf stable",
      ),
      with: words(
        "natural ingredients, dietary fiber, real fruit, natural flavors, whole grain, sea salt, simple ingredients, no artificial",
      ),
      for: words("breakfast, snacking, keto diet, lunch boxes, gift giving"),
    },
  },
];

/** Syllables for made-up brand names. */
export const BRAND_HEADS: readonly string[] = words(
  "Lu, Ve, Ora, Zen, Ka, Mo, Nor, Tri, Vi, Sol, Bel, Ar, Cor, Fen, Jo, Li, Pra, Que, Ri, Ta",
);
/** Brand name endings. */
export const BRAND_TAILS: readonly string[] = words(
  "mora, xio, vane, lio, ndo, kora, tex, lune, vista, ria, mont, zy, gen, loom, hart, well",
);
/** Sentences for descriptions; {noun}, {brand}, {attr} are filled in. */
export const DESCRIPTION_TEMPLATES: readonly string[] = [
  "The {brand} {noun} is designed with care and tested for everyday use.",
  "Enjoy {attr} in a {noun} you can count on.",
  "This {noun} combines {attr} with a clean, modern look.",
  "Made by {brand}, a brand customers trust for value and quality.",
  "Our {noun} is a thoughtful gift and a great addition to any collection.",
];
/** Review titles and bodies. */
export const REVIEW_TITLES: readonly string[] = words(
  "Great value, Just as described, Love it, Works well, Not bad, Would buy again",
);
export const REVIEW_BODIES: readonly string[] = [
  "Arrived quickly and matches the pictures.",
  "Good quality for the price, I am happy with it.",
  "It does the job, nothing fancy.",
  "Better than I expected, recommended.",
];

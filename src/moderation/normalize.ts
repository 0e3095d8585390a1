/**
 * Text as moderation compares it: look-alike spellings of a term collapse to one form. NFKD
 * folds compatibility forms (full-width letters, ligatures, superscripts) and splits accents
 * off, which are then dropped; case is folded; Cyrillic and Greek letters that look Latin, and
 * digits and symbols used as letters, become those letters; and spacing, punctuation, symbols
 * and invisible characters are removed, so "B.a d", "bád" and "ВАD" all read "bad".
 */
const LOOKALIKES: Record<string, string> = {
  // Cyrillic
  а: "a",
  в: "b",
  е: "e",
  ё: "e",
  к: "k",
  м: "m",
  н: "h",
  о: "o",
  р: "p",
  с: "c",
  т: "t",
  у: "y",
  х: "x",
  ѕ: "s",
  і: "i",
  ї: "i",
  ј: "j",
  ԁ: "d",
  ԛ: "q",
  ԝ: "w",
  ү: "y",
  һ: "h",
  // Greek
  α: "a",
  β: "b",
  γ: "y",
  ε: "e",
  η: "n",
  ι: "i",
  κ: "k",
  μ: "u",
  ν: "v",
  ο: "o",
  ρ: "p",
  τ: "t",
  υ: "u",
  χ: "x",
  ω: "w",
  // Digits and symbols written for letters
  "0": "o",
  "1": "i",
  "3": "e",
  "4": "a",
  "5": "s",
  "7": "t",
  "8": "b",
  "9": "g",
  "@": "a",
  $: "s",
  "!": "i",
  "|": "i",
  "€": "e",
  "£": "l",
  "¢": "c",
  // Latin letters NFKD leaves alone
  ı: "i",
  ł: "l",
  ø: "o",
  đ: "d",
  ß: "ss",
  æ: "ae",
  œ: "oe",
};

export function normalizeForModeration(text: string): string {
  let out = "";
  for (const ch of text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase()) {
    const mapped = LOOKALIKES[ch] ?? ch;
    if (/^[\p{L}\p{N}]+$/u.test(mapped)) out += mapped;
  }
  return out;
}
